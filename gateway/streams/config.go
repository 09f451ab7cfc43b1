// Package streams serves the WebSocket surfaces of the gateway: the public market streams
// (ticks, book tickers, klines, day tickers, depth) fed by the in-memory market projection, and
// the per-key user data stream fed by the projection change feed. The gateway mounts it on its
// Fiber app (gateway/routes_streams.go); docs/streams.md is its reference.
package streams

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"
	"tradesvc/infra/check"
)

// Config configures the streams. Zero values take the spec's defaults (WithDefaults); the
// timing values are configurable so that tests can use short ones.
type Config struct {
	// PingInterval is how often the server pings each connection (default 3 min).
	PingInterval time.Duration
	// PongTimeout disconnects a connection that answered none of its pings for this long
	// (default 10 min).
	PongTimeout time.Duration
	// Lifetime closes every connection this long after it opened, with code 1000 (default 24 h).
	Lifetime time.Duration
	// MaxStreams is the most market streams one connection may hold (default 200; -1101).
	MaxStreams int
	// MaxMessageRate is the most inbound messages per second; more closes the connection
	// with 1008 (default 10). Pongs are never counted.
	MaxMessageRate int
	// MaxMessageBytes is the largest inbound message; larger closes with 1009 (default 64 KiB).
	MaxMessageBytes int64
	// MaxConnsPerAddr caps concurrent market-stream connections per client address
	// (default 20); beyond it the upgrade is refused with HTTP 503, -1008.
	MaxConnsPerAddr int
	// MaxConns is the overall capacity of this gateway, market and user streams together
	// (default 10000); beyond it the upgrade is refused with HTTP 503, -1008.
	MaxConns int
	// SendQueue is the number of frames queued per connection (default 1024). A connection
	// whose queue is full is closed with 1011: one slow client never slows the others.
	SendQueue int
	// WriteTimeout bounds one write to a client; a client that accepts nothing for this long
	// is dropped (default 10 s).
	WriteTimeout time.Duration
	// Coalesce, CoalescePerConn and CoalesceMax space the data writes to one connection: a
	// frame that follows the connection's previous write sooner than the window waits out
	// the window and goes out in one write with whatever arrived meanwhile. The window is
	// CoalescePerConn times the connections open on this gateway, at least Coalesce
	// (default 2 ms) and at most CoalesceMax (default 50 ms); CoalescePerConn defaults to
	// 40 µs, about what one write to one client costs, so with a thousand busy connections
	// each is written every 40 ms and every connection's turn comes within the window. A
	// quiet connection gets each frame at once; a busy one gets a batch per window, which
	// bounds the writes (system calls, TLS records, wake-ups) however fast its streams are
	// and keeps the goroutines that feed the streams from queueing behind a thousand
	// writers (docs/benchmarks.md, Streams). A negative Coalesce turns the spacing off.
	Coalesce        time.Duration
	CoalescePerConn time.Duration
	CoalesceMax     time.Duration
	// CloseGrace is how long a closing connection waits for the client's close frame before
	// the socket is closed (default 2 s).
	CloseGrace time.Duration
	// DepthSymbols are the symbols whose @depth stream delivers (default none: subscribing
	// to @depth succeeds and delivers nothing).
	DepthSymbols []string
	// SymbolRefresh is how often the digits of streamed symbols are re-read (default 10 s).
	SymbolRefresh time.Duration
	// ListenKeyLifetime is how long a listen key lives after its creation or last keepalive
	// (default 60 min).
	ListenKeyLifetime time.Duration
	// UserRecheck is how often a user stream re-reads its listen key, its API key's scope
	// and the trading switch (default 5 s: a login leaving the scope stops within seconds).
	UserRecheck time.Duration
	// UserBuffer is the change-feed buffer of one user stream (default 1024 events); a stream
	// that falls further behind is closed with 1011.
	UserBuffer int
	// Logger receives connection errors worth an operator's attention (default slog.Default()).
	Logger *slog.Logger
	// Clock is the server clock (default time.Now).
	Clock func() time.Time
}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	setDur := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	setInt := func(n *int, def int) {
		if *n == 0 {
			*n = def
		}
	}
	setDur(&c.PingInterval, 3*time.Minute)
	setDur(&c.PongTimeout, 10*time.Minute)
	setDur(&c.Lifetime, 24*time.Hour)
	setDur(&c.WriteTimeout, 10*time.Second)
	setDur(&c.CloseGrace, 2*time.Second)
	setDur(&c.Coalesce, 2*time.Millisecond)
	setDur(&c.CoalescePerConn, 40*time.Microsecond)
	setDur(&c.CoalesceMax, 50*time.Millisecond)
	setDur(&c.SymbolRefresh, 10*time.Second)
	setDur(&c.ListenKeyLifetime, 60*time.Minute)
	setDur(&c.UserRecheck, 5*time.Second)
	setInt(&c.MaxStreams, 200)
	setInt(&c.MaxMessageRate, 10)
	setInt(&c.MaxConnsPerAddr, 20)
	setInt(&c.MaxConns, 10000)
	setInt(&c.SendQueue, 1024)
	setInt(&c.UserBuffer, 1024)
	c.MaxMessageBytes = cmp.Or(c.MaxMessageBytes, 64<<10)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c
}

// Validate reports every configuration error at once (after defaults).
func (c Config) Validate() error {
	var errs check.Problems
	positive := map[string]time.Duration{"PingInterval": c.PingInterval, "PongTimeout": c.PongTimeout,
		"Lifetime": c.Lifetime, "WriteTimeout": c.WriteTimeout, "CloseGrace": c.CloseGrace,
		"SymbolRefresh": c.SymbolRefresh, "ListenKeyLifetime": c.ListenKeyLifetime, "UserRecheck": c.UserRecheck}
	for name, d := range positive {
		if d <= 0 {
			errs.Add(fmt.Errorf("streams: %s must be positive, got %v", name, d))
		}
	}
	counts := map[string]int{"MaxStreams": c.MaxStreams, "MaxMessageRate": c.MaxMessageRate,
		"MaxConnsPerAddr": c.MaxConnsPerAddr, "MaxConns": c.MaxConns, "SendQueue": c.SendQueue, "UserBuffer": c.UserBuffer}
	for name, n := range counts {
		if n <= 0 {
			errs.Add(fmt.Errorf("streams: %s must be positive, got %d", name, n))
		}
	}
	errs.If(c.MaxMessageBytes <= 0, "streams: MaxMessageBytes must be positive")
	if c.CoalescePerConn < 0 {
		errs.Add(fmt.Errorf("streams: CoalescePerConn must not be negative, got %v", c.CoalescePerConn))
	}
	if c.Coalesce >= 0 && c.CoalesceMax < c.Coalesce {
		errs.Add(fmt.Errorf("streams: CoalesceMax (%v) must be at least Coalesce (%v)", c.CoalesceMax, c.Coalesce))
	}
	return errs.Err()
}
