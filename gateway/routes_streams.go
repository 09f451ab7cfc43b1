package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"tradesvc/gateway/streams"
	"tradesvc/query"
)

// MarketFeed is the in-memory market projection as the market streams need it: a listener
// of each applied tick and day-statistics update (projections.Market).
type MarketFeed interface {
	OnApplied(tick func(query.Quote), stats func(query.DayStats))
}

// StreamDeps are the sources of the WebSocket streams. With Market nil no stream URL is
// served; with Changes nil the user data stream and the listen-key endpoints are not.
type StreamDeps struct {
	Market MarketFeed
	// Symbols checks stream names against the symbol read model (exact case).
	Symbols query.SymbolLookup
	// Changes is the projection change feed the user data stream follows.
	Changes query.ChangeFeed
	// ListenKeys keeps listen keys (infra/listenkeys).
	ListenKeys query.ListenKeyStore
	// Bars are the stored bars the kline streams resume from when the gateway starts
	// (SeedKlines); nil: the kline streams start with the first tick this process sees.
	Bars query.BarHistory
}

// SeedKlines resumes the kline streams' current bars from the stored bars, so that after a
// restart a streamed bar is the bar GET /v1/klines has (same open time and open, and once
// closed, the same bar). Call it before the tick tail starts. It reports how many symbols
// were seeded; without market streams or Bars it does nothing.
func (s *Server) SeedKlines(ctx context.Context) (int, error) {
	if s.streams == nil || s.deps.Streams.Bars == nil {
		return 0, nil
	}
	n, err := s.streams.Market().SeedKlines(ctx, s.deps.Streams.Bars)
	if err != nil {
		return n, fmt.Errorf("gateway: seed the kline streams: %w", err)
	}
	return n, nil
}

// registerStreams mounts the market streams (/ws, /ws/<name>, /stream), the user data stream
// (/ws/<listenKey>) and the listen-key endpoints, and hooks the market streams to the market
// projection.
func (s *Server) registerStreams() error {
	d := s.deps.Streams
	if d.Market == nil {
		return nil
	}
	if d.Symbols == nil {
		return errors.New("gateway: the streams need Symbols")
	}
	cfg := s.cfg.Streams
	if cfg.Logger == nil {
		cfg.Logger = s.log
	}
	if cfg.Clock == nil {
		cfg.Clock = s.clock
	}
	srv, err := streams.New(cfg, streams.Deps{Symbols: d.Symbols, Changes: d.Changes, ListenKeys: d.ListenKeys,
		Keys: streamKeys{s.keys}, Switches: s.switches})
	if err != nil {
		return fmt.Errorf("gateway: streams: %w", err)
	}
	s.streams = srv
	d.Market.OnApplied(srv.Market().TickApplied, srv.Market().DayStatsApplied)
	srv.Mount(s.fiber)
	if u := srv.Users(); u != nil {
		s.registerListenKeys(u)
	}
	return nil
}

// registerListenKeys registers POST, PUT and DELETE /v1/listenKey (USER_STREAM: key header,
// no signature; weight 1).
func (s *Server) registerListenKeys(u *streams.Users) {
	s.Handle(Endpoint{Method: fiber.MethodPost, Path: "/v1/listenKey", Security: SecUserStream},
		func(c *fiber.Ctx, r *Request) error {
			id, err := storedKeyID(r.Key)
			if err != nil {
				return err
			}
			lk, err := u.CreateListenKey(c.UserContext(), id, r.Key.APIKey)
			if err != nil {
				return unavailable(err)
			}
			return c.JSON(struct {
				ListenKey string `json:"listenKey"`
			}{lk})
		})
	s.Handle(Endpoint{Method: fiber.MethodPut, Path: "/v1/listenKey", Security: SecUserStream},
		func(c *fiber.Ctx, r *Request) error {
			id, err := storedKeyID(r.Key)
			if err != nil {
				return err
			}
			if err := u.ExtendListenKey(c.UserContext(), id, r.Params.Optional("listenKey")); err != nil {
				return unavailable(err)
			}
			return c.JSON(struct{}{})
		})
	s.Handle(Endpoint{Method: fiber.MethodDelete, Path: "/v1/listenKey", Security: SecUserStream},
		func(c *fiber.Ctx, r *Request) error {
			id, err := storedKeyID(r.Key)
			if err != nil {
				return err
			}
			lk, err := r.Params.Required("listenKey")
			if err != nil {
				return err
			}
			if err := u.DeleteListenKey(c.UserContext(), id, lk); err != nil {
				return unavailable(err)
			}
			return c.JSON(struct{}{})
		})
}

// runStreams runs the streams while the gateway serves; the returned function stops them
// and waits until every stream connection is closed (hijacked connections are not the HTTP
// server's to close).
func (s *Server) runStreams(ctx context.Context) func() {
	if s.streams == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.streams.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// storedKeyID is the key's stored id (Key.ID is its decimal string), which listen keys and
// change-feed rows carry.
func storedKeyID(k *Key) (int64, error) {
	id, err := strconv.ParseInt(k.ID, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("gateway: key id %q is not a stored id: %w", k.ID, err)
	}
	return id, nil
}

// streamKeys gives the user streams the gateway's key cache, so a revocation or a scope
// change reaches open streams as fast as it reaches REST calls.
type streamKeys struct{ c *keyCache }

func (k streamKeys) Key(ctx context.Context, apiKey string) (streams.KeyScope, bool, error) {
	a, err := k.c.get(ctx, apiKey)
	if err != nil || a == nil {
		return streams.KeyScope{}, false, err
	}
	id, err := storedKeyID(&a.Key)
	if err != nil {
		return streams.KeyScope{}, false, err
	}
	return streams.KeyScope{ID: id, Logins: a.Logins, Revoked: a.Revoked}, true, nil
}
