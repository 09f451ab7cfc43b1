// Package gateway is the service's HTTPS front door: a Fiber app that authenticates keys and
// signatures, applies rate limits and usage headers, parses parameters, renders the error
// envelope, and routes REST calls to query (and, later, command) handlers.
package gateway

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/recover"

	"tradesvc/gateway/ratelimit"
	"tradesvc/gateway/streams"
)

// Server is the REST gateway. Build it with New, register extra endpoints with Handle, then
// call Serve once.
type Server struct {
	cfg      Config
	deps     Deps
	app      Application
	fiber    *fiber.App
	log      *slog.Logger
	clock    func() time.Time
	keys     *keyCache
	limiter  *ratelimit.Limiter
	switches Switches
	methods  routeMethods
	streams  *streams.Server // nil when no streams are served (routes_streams.go)
	// admission sheds operations the order path cannot take now (admission.go).
	admission *Admission
}

// New builds the gateway and registers every endpoint on the application's handlers.
func New(cfg Config, deps Deps, app Application) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := errors.Join(cfg.Validate(), deps.Validate()); err != nil {
		return nil, err
	}
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	lim, err := ratelimit.NewWithStore(ratelimit.Config{Defaults: cfg.Limits, BanSteps: cfg.BanSteps, ForgiveAfter: 24 * time.Hour},
		deps.RateLimits)
	if err != nil {
		return nil, fmt.Errorf("gateway: rate limiter: %w", err)
	}
	s := &Server{
		cfg: cfg, deps: deps, app: app, log: cfg.Logger, clock: deps.Clock, limiter: lim, switches: deps.Switches,
		keys: &keyCache{store: deps.Keys, ttl: cfg.KeyCacheTTL, now: deps.Clock}, methods: routeMethods{},
		admission: NewAdmission(cfg.Admission, time.Now),
	}
	s.fiber = fiber.New(fiber.Config{
		ErrorHandler: func(c *fiber.Ctx, err error) error {
			// Requests that never reach an endpoint's pipeline (unknown path or method,
			// retired path, oversized body) still report the key's usage when keyed.
			s.keyedUsageHeaders(c)
			s.allowHeader(c, err)
			return writeError(c, s.log, err)
		},
		BodyLimit:             cfg.BodyLimit,
		ReadBufferSize:        cfg.ReadBufferSize,
		ReadTimeout:           cfg.ReadTimeout,
		WriteTimeout:          cfg.WriteTimeout,
		IdleTimeout:           cfg.IdleTimeout,
		CaseSensitive:         true,
		DisableStartupMessage: true,
		// The same encoding as encoding/json, three times faster (every answer is JSON).
		JSONEncoder: json.Marshal,
		JSONDecoder: json.Unmarshal,
	})
	if cfg.OnRequest != nil {
		s.fiber.Use(s.observe)
	}
	s.fiber.Use(recover.New())
	for _, p := range cfg.RetiredPaths {
		s.fiber.All(p, func(*fiber.Ctx) error { return errRetired })
		for _, m := range s.fiber.Config().RequestMethods {
			s.methods.add(Route{Method: m, Path: p, Retired: true})
		}
	}
	s.fiber.Server().Handler = s.guardMethods(s.fiber.Server().Handler)
	s.registerReads()
	if err := s.registerStreams(); err != nil {
		return nil, err
	}
	return s, nil
}

// Limits are the default per-key limits in force.
func (s *Server) Limits() ratelimit.Limits { return s.cfg.Limits }

// App exposes the Fiber app for in-process tests (app.Test); production serves with Serve.
func (s *Server) App() *fiber.App { return s.fiber }

// Admission is the gateway's admission control: the change feed's observer (Observe) and
// readiness (State) take it.
func (s *Server) Admission() *Admission { return s.admission }

// Serve serves HTTPS on ln until ctx is cancelled, then shuts down gracefully. Plain HTTP
// on the port is answered 400 (-1020) and closed; a client that sends nothing is dropped
// after ReadTimeout. Serve may be called once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	tcfg := s.cfg.TLS.Clone()
	tcfg.NextProtos = []string{"http/1.1"}
	if tcfg.MinVersion < tls.VersionTLS12 {
		tcfg.MinVersion = tls.VersionTLS12
	}
	tln := tls.NewListener(&plainHTTPRefuser{Listener: ln, timeout: s.cfg.ReadTimeout}, tcfg)
	errc := make(chan error, 1)
	go func() { errc <- s.fiber.Listener(tln) }()
	defer s.runStreams(ctx)()

	sweep := time.NewTicker(10 * time.Second)
	defer sweep.Stop()
	for {
		select {
		case <-sweep.C:
			s.keys.sweep()
		case err := <-errc:
			return err
		case <-ctx.Done():
			if err := s.fiber.ShutdownWithTimeout(10 * time.Second); err != nil {
				return fmt.Errorf("gateway: shutdown: %w", err)
			}
			<-errc
			return nil
		}
	}
}

// observe reports each request to Config.OnRequest once its final status is known: an error
// from the chain is rendered here (as the app's error handler would) so the status is final.
func (s *Server) observe(c *fiber.Ctx) error {
	start := time.Now()
	if err := c.Next(); err != nil {
		if herr := s.fiber.Config().ErrorHandler(c, err); herr != nil {
			return herr
		}
	}
	route := c.Route().Path
	if route == "/" {
		route = "unmatched" // the middleware's own route: no endpoint serves this path or method
	}
	// Fiber's strings view reused request buffers: copy what outlives the request.
	s.cfg.OnRequest(strings.Clone(c.Method()), strings.Clone(route), c.Response().StatusCode(), time.Since(start))
	return nil
}
