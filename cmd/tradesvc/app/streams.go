package app

import "tradesvc/gateway/streams"

// streamsConfig carries the configured stream settings to the gateway's streams.
func (a *App) streamsConfig() streams.Config {
	s := a.cfg.Streams
	return streams.Config{PingInterval: s.PingInterval, PongTimeout: s.PongTimeout, Lifetime: s.Lifetime,
		MaxConns: s.MaxConns, MaxConnsPerAddr: s.MaxConnsPerAddr, SendQueue: s.SendQueue, WriteTimeout: s.WriteTimeout,
		DepthSymbols: s.DepthSymbols, ListenKeyLifetime: s.ListenKeyLifetime, UserRecheck: s.UserRecheck}
}
