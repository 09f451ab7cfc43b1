package gateway

import (
	"cmp"
	"crypto/tls"
	"fmt"
	"log/slog"
	"time"

	"tradesvc/gateway/ratelimit"
	"tradesvc/gateway/streams"
	"tradesvc/infra/check"
)

// Config configures the gateway. Zero values take the documented defaults (WithDefaults).
type Config struct {
	// TLS is the server's TLS configuration (certificate required). Plain HTTP is refused.
	TLS *tls.Config
	// BodyLimit is the largest request body in bytes (default 64 KiB); larger is 413.
	BodyLimit int
	// ReadTimeout bounds reading a request, TLS handshake included (default 10 s), so a
	// silent or plain-HTTP client never holds a connection forever.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing a response (default 10 s).
	WriteTimeout time.Duration
	// IdleTimeout closes idle keep-alive connections (default 120 s).
	IdleTimeout time.Duration
	// ReadBufferSize is the per-connection read buffer; it also bounds the request line and
	// headers, so long query strings (batchOrders in the query) need room (default 16 KiB).
	ReadBufferSize int
	// KeyCacheTTL is how long a key lookup is reused (default 1 s, at most 2 s).
	KeyCacheTTL time.Duration
	// Limits are the default per-key limits (default 1200 weight/min, 100 orders/10 s,
	// 1200 orders/min).
	Limits ratelimit.Limits
	// BanSteps is the 418 escalation (default 2 min, 1 h, 24 h).
	BanSteps []time.Duration
	// MaxParams is the most parameters a request may carry (default 32); more is -1101.
	MaxParams int
	// RetiredPaths answer -1016 (410) for every method (default RetiredPaths).
	RetiredPaths []string
	// Logger receives internal errors (default slog.Default()).
	Logger *slog.Logger
	// Streams configures the WebSocket streams (zero values: the spec's limits).
	Streams streams.Config
	// OnRequest, when set, is told of every answered request: method, route pattern
	// ("unmatched" for a path no route serves), final HTTP status and time taken (metrics).
	OnRequest func(method, route string, status int, took time.Duration)
	// Admission bounds the operations let into the order path (admission.go; zero values:
	// its defaults).
	Admission AdmissionConfig
	// OnStage, when set, is told how long an operation waited for took from the request's
	// arrival to its answer ("answered", metrics).
	OnStage func(stage string, took time.Duration)
}

// DefaultRetiredPaths are endpoints of earlier drafts, answered -1016 forever (a new
// slice on every call, so no configuration shares it).
func DefaultRetiredPaths() []string {
	return []string{
		"/v1/order/test",        // no separate sandbox: test keys use demo logins
		"/v1/positionSide/dual", // hedging only, no position side
		"/v1/premiumIndex",      // no mark or index price
		"/v1/fundingRate",       // swaps, not funding
		"/v1/leverage",          // leverage belongs to the account group
		"/v1/marginType",        // margin belongs to the trade server
	}
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	c.BodyLimit = cmp.Or(c.BodyLimit, 64<<10)
	c.ReadTimeout = cmp.Or(c.ReadTimeout, 10*time.Second)
	c.WriteTimeout = cmp.Or(c.WriteTimeout, 10*time.Second)
	c.IdleTimeout = cmp.Or(c.IdleTimeout, 120*time.Second)
	c.ReadBufferSize = cmp.Or(c.ReadBufferSize, 16<<10)
	c.KeyCacheTTL = cmp.Or(c.KeyCacheTTL, time.Second)
	c.Limits = c.Limits.Or(ratelimit.DefaultLimits())
	if len(c.BanSteps) == 0 {
		c.BanSteps = ratelimit.DefaultBanSteps()
	}
	c.MaxParams = cmp.Or(c.MaxParams, 32)
	if c.RetiredPaths == nil {
		c.RetiredPaths = DefaultRetiredPaths()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports configuration errors (after defaults).
func (c Config) Validate() error {
	var errs check.Problems
	errs.If(c.TLS == nil || (len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil && c.TLS.GetConfigForClient == nil), "gateway: TLS config with a certificate is required")
	errs.If(c.ReadBufferSize < 4096, "gateway: ReadBufferSize must be at least 4096")
	errs.If(c.BodyLimit <= 0, "gateway: BodyLimit must be positive")
	errs.If(c.ReadTimeout <= 0 || c.WriteTimeout <= 0 || c.IdleTimeout <= 0, "gateway: timeouts must be positive")
	if c.KeyCacheTTL < 0 || c.KeyCacheTTL > 2*time.Second {
		errs.Add(fmt.Errorf("gateway: KeyCacheTTL %v outside 0..2s", c.KeyCacheTTL))
	}
	errs.If(c.MaxParams <= 0, "gateway: MaxParams must be positive")
	return errs.Err()
}
