package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/gateway"
	"tradesvc/gateway/ratelimit"
	"tradesvc/gateway/ratelimit/sharedlimits"
	"tradesvc/infra/config"
	"tradesvc/infra/keys"
	"tradesvc/infra/listenkeys"
	tlsx "tradesvc/infra/tls"
	"tradesvc/projections"
	"tradesvc/query"
)

// runGateway serves the REST API over TLS from the projections: reference data and accounts
// from Postgres, bars from ClickHouse, quotes from the in-memory market projection that this
// process tails from the tick topic.
func (a *App) runGateway(ctx context.Context) error {
	tlsCfg, err := a.serverTLS()
	if err != nil {
		return err
	}
	store, err := a.keyStore()
	if err != nil {
		return err
	}
	ref, err := projections.NewReferenceReader(a.pool, 2*time.Second)
	if err != nil {
		return err
	}
	a.refReader.Store(ref)
	bars, err := projections.NewHistoryReader(a.ch)
	if err != nil {
		return err
	}
	market := projections.NewMarket(a.now().UnixMilli())
	trading, deals, feed, err := a.tradingReads()
	if err != nil {
		return err
	}
	a.changeFeed.Store(feed)
	queries, err := query.NewHandlers(query.Readers{Symbols: ref, Quotes: market, DayStats: market, Bars: bars,
		Accounts: ref, Server: ref, Operations: trading, OperationChanges: feed, Trading: trading, Deals: deals})
	if err != nil {
		return err
	}
	commands, records, err := a.commandHandlers(trading, ref, market, queries.Operation)
	if err != nil {
		return err
	}
	listenKeys, err := listenkeys.New(a.pool)
	if err != nil {
		return err
	}
	limits, err := a.rateLimitStore()
	if err != nil {
		return err
	}
	adm := a.cfg.Admission
	srv, err := gateway.New(gateway.Config{TLS: tlsCfg, Logger: a.log.With("role", "gateway"),
		OnRequest: a.metrics.HTTPRequest, OnStage: a.metrics.OrderStage, Streams: a.streamsConfig(),
		Admission: gateway.AdmissionConfig{MaxInFlight: adm.MaxInFlight, MinInFlight: adm.MinInFlight, MaxAge: adm.MaxAge, StaleLimit: adm.StaleLimit,
			RiskFactor: adm.RiskFactor, OnShed: a.metrics.Shed, MaxSchedDelay: adm.MaxSchedDelay, QueueTarget: adm.QueueTarget, OnLower: a.metrics.BoundLowered}},
		gateway.Deps{Keys: gatewayKeys{store}, Switches: a.switches, Accounts: ref.Cached(), Clock: a.now,
			Streams:    gateway.StreamDeps{Market: market, Symbols: ref, Changes: feed, ListenKeys: listenKeys, Bars: bars},
			RateLimits: limits},
		gateway.Application{Commands: commands, Queries: queries})
	if err != nil {
		return err
	}
	feed.Observe(srv.Admission().Observe)
	// Before the tick tail starts (the seed says which of its ticks the stored bars hold) and
	// before the gateway takes connections.
	a.seedKlines(ctx, srv)
	if ctx.Err() != nil {
		return nil // stopped while seeding
	}
	ln, err := net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return fmt.Errorf("gateway listen %s: %w", a.cfg.Listen, err)
	}
	a.gatewayAddr <- ln.Addr().String()
	a.gw.admission.Store(srv.Admission())
	return a.serveGateway(ctx, srv, ln, market, feed, records) // supervise.go
}

// rateLimitStore is where this gateway keeps the keys' rate-limit state: its own memory
// (nil), or Postgres shared with every other gateway, so that one key's limits hold across
// all of them (--rate-limit-store).
func (a *App) rateLimitStore() (ratelimit.Store, error) {
	if a.cfg.RateLimitStore != config.RateLimitPostgres {
		return nil, nil
	}
	return sharedlimits.New(a.pool, ratelimit.DefaultPolicy())
}

// serverTLS is the operator's certificate, or the local CA's one generated under RunDir/tls.
func (a *App) serverTLS() (*tls.Config, error) {
	_, cert, key, err := tlsx.Resolve(filepath.Join(a.cfg.RunDir, "tls"), a.cfg.TLSCert, a.cfg.TLSKey)
	if err != nil {
		return nil, err
	}
	return tlsx.ServerConfig(cert, key)
}

func (a *App) keyStore() (*keys.Store, error) { return KeyStore(a.cfg, a.pool) }

// KeyStore opens the API key store on pool with the configured master key.
func KeyStore(cfg config.Config, pool *pgxpool.Pool) (*keys.Store, error) {
	master, err := keys.ResolveMasterKey(cfg.MasterKey, cfg.MasterKeyFile)
	if err != nil {
		return nil, err
	}
	return keys.NewStore(keys.Config{Pool: pool, MasterKey: master})
}

// gatewayKeys adapts the key store's records to what the gateway needs.
type gatewayKeys struct{ store *keys.Store }

func (g gatewayKeys) Lookup(ctx context.Context, apiKey string) (gateway.Key, error) {
	rec, err := g.store.Lookup(ctx, apiKey)
	if errors.Is(err, keys.ErrNotFound) {
		return gateway.Key{}, gateway.ErrUnknownKey
	}
	if err != nil {
		return gateway.Key{}, err
	}
	return gateway.Key{ID: strconv.FormatInt(rec.ID, 10), APIKey: rec.APIKey, Secret: rec.Secret, Logins: rec.Logins,
		ReadOnly: rec.ReadOnly, AllowCIDRs: rec.AllowCIDRs, Revoked: rec.RevokedAt != 0,
		WeightPerMinute: rec.Limits.WeightPerMinute, Orders10s: rec.Limits.Orders10s, Orders1m: rec.Limits.Orders1m}, nil
}
