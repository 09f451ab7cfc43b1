package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

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

// newSetting declares one setting whose raw value lands in raw[flagName].
func newSetting(raw map[string]*string, flagName, def, usage string) setting {
	v := new(string)
	raw[flagName] = v
	return setting{flag: flagName, env: "TRADESVC_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_")), def: def, usage: usage, dst: v}
}

func streamSettings(raw map[string]*string) []setting {
	s := func(flagName, def, usage string) setting { return newSetting(raw, flagName, def, usage) }
	return []setting{
		s("ws-ping-interval", "3m", "WebSocket streams: server ping interval"),
		s("ws-pong-timeout", "10m", "WebSocket streams: close a connection that answered no ping for this long"),
		s("ws-lifetime", "24h", "WebSocket streams: connection lifetime (close 1000)"),
		s("ws-max-conns", "10000", "WebSocket streams: overall capacity of a gateway (beyond: HTTP 503, -1008)"),
		s("ws-max-conns-per-addr", "20", "WebSocket streams: market-stream connections per client address"),
		s("ws-send-queue", "1024", "WebSocket streams: frames queued per connection before it is closed with 1011"),
		s("ws-write-timeout", "10s", "WebSocket streams: drop a client that accepts nothing for this long"),
		s("ws-depth-symbols", "", "WebSocket streams: comma-separated symbols whose @depth stream delivers"),
		s("listen-key-lifetime", "60m", "user data stream: listen key lifetime from creation or keepalive"),
		s("user-stream-recheck", "5s", "user data stream: how often a stream re-reads its listen key, scope and the trading switch"),
		s("user-stream-max-lag", "5s", "user data stream: close with 1011 once the service's intake for a login of the stream lags this long"),
		s("change-retention", "1h", "user data stream: how long the change feed's rows are kept (the projector prunes older ones)"),
	}
}

// loadStreams parses the stream settings; every value must be positive.
func loadStreams(get func(string) string) (Streams, error) {
	var st Streams
	var errs []error
	dur := func(name string, dst *time.Duration) {
		d, err := time.ParseDuration(get(name))
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s: want a positive duration, got %q", name, get(name)))
		}
		*dst = d
	}
	num := func(name string, dst *int) {
		n, err := strconv.Atoi(get(name))
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s: want a positive integer, got %q", name, get(name)))
		}
		*dst = n
	}
	dur("ws-ping-interval", &st.PingInterval)
	dur("ws-pong-timeout", &st.PongTimeout)
	dur("ws-lifetime", &st.Lifetime)
	num("ws-max-conns", &st.MaxConns)
	num("ws-max-conns-per-addr", &st.MaxConnsPerAddr)
	num("ws-send-queue", &st.SendQueue)
	dur("ws-write-timeout", &st.WriteTimeout)
	st.DepthSymbols = SplitList(get("ws-depth-symbols"))
	dur("listen-key-lifetime", &st.ListenKeyLifetime)
	dur("user-stream-recheck", &st.UserRecheck)
	dur("user-stream-max-lag", &st.UserMaxLag)
	dur("change-retention", &st.ChangeRetention)
	return st, errors.Join(errs...)
}
