package config

import "time"

// Streams are the WebSocket stream settings (gateway/streams.Config). The defaults are the
// spec's limits; tests shorten the timings.
type Streams struct {
	// PingInterval: the server pings every connection this often.
	PingInterval time.Duration
	// PongTimeout: a connection that answered no ping for this long is closed (1001).
	PongTimeout time.Duration
	// Lifetime: every connection is closed (1000) this long after it opened.
	Lifetime time.Duration
	// MaxConns is the overall capacity of one gateway (market and user streams).
	MaxConns int
	// MaxConnsPerAddr caps market-stream connections per client address.
	MaxConnsPerAddr int
	// SendQueue is the number of frames queued per connection before it is closed with 1011.
	SendQueue int
	// WriteTimeout: a client that accepts nothing for this long is dropped.
	WriteTimeout time.Duration
	// DepthSymbols are the symbols whose @depth stream delivers.
	DepthSymbols []string
	// ListenKeyLifetime: a listen key lapses this long after its creation or last keepalive.
	ListenKeyLifetime time.Duration
	// UserRecheck: how often a user stream re-reads its listen key, scope and the trading switch.
	UserRecheck time.Duration
	// UserMaxLag: a user stream is closed with 1011 once the service's intake for one of its
	// logins (the relay, the trading projection, the gateway's change feed) has lagged this long.
	UserMaxLag time.Duration
	// ChangeRetention is how long the change feed's rows are kept (the projector prunes older
	// ones); a gateway whose feed was down longer closes the streams that missed rows (1011).
	ChangeRetention time.Duration
}
