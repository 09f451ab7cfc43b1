// Package apptest starts the whole service in-process against the real Kafka, Postgres and
// ClickHouse of `make test`, isolated per test (own topic prefix, Postgres database,
// ClickHouse database, simulator data and ports), for end-to-end tests and benchmarks.
package apptest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwclient/openapicheck"
	"tradesvc/infra/clickhouse"
	"tradesvc/infra/config"
	"tradesvc/infra/keys"
	"tradesvc/infra/testenv"
)

// Service is a running in-process service.
type Service struct {
	App     *app.App
	Config  config.Config
	BaseURL string
	// TLS trusts the service's local CA (for HTTPS and WSS clients).
	TLS *tls.Config
	// HTTP is a keep-alive HTTPS client that trusts the service.
	HTTP *http.Client
	// PG is a pool on the service's database (for arranging keys and reading read models).
	PG *pgxpool.Pool

	pollOnce sync.Once
	poll     Key
	// check validates every response of Client against docs/openapi.yaml.
	check func(*http.Request, *gwclient.Response) error
}

// Vars returns the configuration of one test's isolated service: its own topic prefix,
// Postgres database, ClickHouse database and run directory, and free ports. Several
// processes of one test (a simulator and an executor, say) share these stores.
func Vars(t testing.TB) map[string]string {
	t.Helper()
	return map[string]string{
		"TRADESVC_LISTEN":         "127.0.0.1:0",
		"TRADESVC_SIM_LISTEN":     "127.0.0.1:0",
		"TRADESVC_METRICS_LISTEN": "127.0.0.1:0",
		"TRADESVC_RUN_DIR":        t.TempDir(),
		"TRADESVC_KAFKA_BROKERS":  testenv.Kafka(t),
		"TRADESVC_TOPIC_PREFIX":   testenv.TopicPrefix(t),
		"TRADESVC_PG_URL":         testenv.PGDatabase(t),
		"TRADESVC_CH_ADDR":        testenv.CH(t),
		"TRADESVC_CH_DATABASE":    testenv.CHDatabase(t),
		"TRADESVC_LOG_LEVEL":      "warn",
	}
}

// Process is one running in-process tradesvc.
type Process struct {
	App    *app.App
	Config config.Config

	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// Launch builds and runs tradesvc with vars as its environment; it stops at the latest
// when the test ends.
func Launch(t testing.TB, vars map[string]string) *Process {
	t.Helper()
	fs := flag.NewFlagSet("apptest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg, err := config.Load(fs, nil, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	startCtx, startCancel := context.WithTimeout(ctx, 60*time.Second)
	defer startCancel()
	a, err := app.New(startCtx, cfg, testenv.Logger())
	if err != nil {
		cancel()
		t.Fatalf("app.New: %v", err)
	}
	p := &Process{App: a, Config: cfg, cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- a.Run(ctx) }()
	t.Cleanup(func() { p.Stop(t) })
	return p
}

// LaunchSim runs the trade-server simulator alone (`serve --roles sim`) with vars as the rest
// of its environment and returns it with the address it listens on.
func LaunchSim(t testing.TB, vars map[string]string) (*Process, string) {
	t.Helper()
	simVars := maps.Clone(vars)
	simVars["TRADESVC_ROLES"] = "sim"
	p := Launch(t, simVars)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, err := p.App.SimAddr(ctx)
	if err != nil {
		t.Fatalf("simulator address: %v", err)
	}
	return p, addr
}

// Stop stops the process gracefully (once) and fails the test if it does not stop cleanly.
func (p *Process) Stop(t testing.TB) {
	p.once.Do(func() {
		p.cancel()
		select {
		case err := <-p.done:
			if err != nil {
				t.Errorf("service stopped with error: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("service did not stop within 30s")
		}
		if err := p.App.Close(); err != nil {
			t.Errorf("service closed with errors: %v", err)
		}
	})
}

// Start builds and runs the service with every role; it stops when the test ends.
func Start(t testing.TB) *Service {
	t.Helper()
	return Serve(t, Launch(t, Vars(t)))
}

// Serve wraps a process that runs the gateway role with HTTPS clients that trust it.
func Serve(t testing.TB, p *Process) *Service {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	addr, err := p.App.GatewayAddr(ctx)
	if err != nil {
		t.Fatalf("gateway did not start: %v", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(p.Config.RunDir, "tls", "ca.pem"))
	if err != nil {
		t.Fatalf("read CA: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tlsCfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	pg, err := pgxpool.New(context.Background(), p.Config.PGURL)
	if err != nil {
		t.Fatalf("pg pool: %v", err)
	}
	t.Cleanup(pg.Close)
	contract, err := openapicheck.Repo()
	if err != nil {
		t.Fatalf("the REST contract: %v", err)
	}
	return &Service{App: p.App, Config: p.Config, BaseURL: "https://" + addr, TLS: tlsCfg, PG: pg, check: contract.Check,
		HTTP: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: tlsCfg, MaxIdleConnsPerHost: 64}}}
}

// Eventually polls cond every 50ms until it holds or timeout passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ClickHouse opens a connection to the service's ClickHouse database (closed with the test).
func (s *Service) ClickHouse(t testing.TB) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(context.Background(), clickhouse.Config{Addr: s.Config.CHAddr, Database: s.Config.CHDatabase})
	if err != nil {
		t.Fatalf("clickhouse: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Key is an API key issued for a test: the public key and its secret.
type Key struct {
	APIKey string
	Secret []byte
	Logins []int64
}

// CreateKey issues a key through the service's own key store (same master key as the
// running gateway) with the given scope, read-only flag and source allowlist (nil: any).
func (s *Service) CreateKey(t testing.TB, logins []int64, readOnly bool, cidrs []string) Key {
	t.Helper()
	return s.CreateKeyWithLimits(t, keys.CreateParams{Logins: logins, ReadOnly: readOnly, AllowCIDRs: cidrs})
}

// CreateKeyWithLimits issues a key from full creation parameters (own rate limits included).
func (s *Service) CreateKeyWithLimits(t testing.TB, p keys.CreateParams) Key {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := s.keyStore(t).Create(ctx, p)
	if err != nil {
		t.Fatalf("create key: %v", err)
	}
	return Key{APIKey: c.APIKey, Secret: []byte(c.APISecret), Logins: c.Logins}
}

// RevokeKey revokes a key through the key store (the gateway notices within its key-cache TTL).
func (s *Service) RevokeKey(t testing.TB, apiKey string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.keyStore(t).Revoke(ctx, apiKey); err != nil {
		t.Fatalf("revoke key: %v", err)
	}
}

// ScopeKey replaces a key's logins through the key store (the gateway notices within its
// key-cache TTL).
func (s *Service) ScopeKey(t testing.TB, apiKey string, logins []int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.keyStore(t).Scope(ctx, apiKey, logins); err != nil {
		t.Fatalf("scope key: %v", err)
	}
}

// SetKeyLimits overwrites a key's own rate limits in cmd.api_keys (0 = service default).
func (s *Service) SetKeyLimits(t testing.TB, apiKey string, weightPerMinute, orders10s, orders1m int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tag, err := s.PG.Exec(ctx, `UPDATE cmd.api_keys SET weight_per_minute = $2, orders_10s = $3, orders_1m = $4,
		updated_at = now() WHERE api_key = $1`, apiKey, weightPerMinute, orders10s, orders1m)
	if err != nil {
		t.Fatalf("set key limits: %v", err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("set key limits: key %q not found", apiKey)
	}
}

func (s *Service) keyStore(t testing.TB) *keys.Store {
	t.Helper()
	st, err := app.KeyStore(s.Config, s.PG)
	if err != nil {
		t.Fatalf("key store: %v", err)
	}
	return st
}

// Client returns a gateway client for key (zero Key: no key header) over the service's
// keep-alive HTTPS client. Every response it receives is validated against docs/openapi.yaml:
// a response the contract does not allow comes back with an error.
func (s *Service) Client(k Key) *gwclient.Client {
	return &gwclient.Client{BaseURL: s.BaseURL, APIKey: k.APIKey, Secret: k.Secret, HTTP: s.HTTP, Check: s.check}
}

// pollKey is a key used only by the Wait helpers: every login of the default seed and a
// huge weight budget, so polling never throttles the keys under test.
func (s *Service) pollKey(t testing.TB) Key {
	t.Helper()
	s.pollOnce.Do(func() {
		s.poll = s.CreateKeyWithLimits(t, keys.CreateParams{Logins: []int64{1001, 1002, 1003, 1004, 1005, 1006},
			Limits: keys.Limits{WeightPerMinute: 1 << 30, Orders10s: 1 << 30, Orders1m: 1 << 30}})
	})
	return s.poll
}

// WaitForSymbols waits until GET /v1/exchangeInfo lists every named symbol (reference data
// projected into Postgres) and returns the listed symbols' digits by name.
func (s *Service) WaitForSymbols(t testing.TB, timeout time.Duration, names ...string) map[string]int {
	t.Helper()
	var digits map[string]int
	Eventually(t, timeout, "symbols "+strings.Join(names, ",")+" in exchangeInfo", func() bool {
		res, err := s.Client(Key{}).Public(context.Background(), http.MethodGet, "/v1/exchangeInfo", nil)
		if err != nil || res.Status != http.StatusOK {
			return false
		}
		var info struct {
			Symbols []struct {
				Symbol string `json:"symbol"`
				Digits int    `json:"digits"`
			} `json:"symbols"`
		}
		if res.JSON(&info) != nil {
			return false
		}
		digits = make(map[string]int, len(info.Symbols))
		for _, y := range info.Symbols {
			digits[y.Symbol] = y.Digits
		}
		for _, n := range names {
			if _, ok := digits[n]; !ok {
				return false
			}
		}
		return true
	})
	return digits
}

// WaitForQuote waits until GET /v1/ticker/price?symbol=... answers 200 (a tick reached the
// in-memory market projection).
func (s *Service) WaitForQuote(t testing.TB, timeout time.Duration, symbol string) {
	t.Helper()
	c := s.Client(s.pollKey(t))
	Eventually(t, timeout, "a quote for "+symbol, func() bool {
		res, err := c.Keyed(context.Background(), http.MethodGet, "/v1/ticker/price", url.Values{"symbol": {symbol}})
		return err == nil && res.Status == http.StatusOK
	})
}

// WaitForAccount waits until signed GET /v1/account?login=... answers 200 (the account
// reached the Postgres read model).
func (s *Service) WaitForAccount(t testing.TB, timeout time.Duration, login int64) {
	t.Helper()
	c := s.Client(s.pollKey(t))
	Eventually(t, timeout, "account "+strconv.FormatInt(login, 10), func() bool {
		res, err := c.Signed(context.Background(), http.MethodGet, "/v1/account",
			url.Values{"login": {strconv.FormatInt(login, 10)}}, gwclient.InQuery)
		return err == nil && res.Status == http.StatusOK
	})
}
