package app

import (
	"tradesvc/projections"
)

// tradingProjection builds projection.trading on the read-model pool; a replaying instance
// writes no change-feed rows (streams and waiters never see history twice).
func (a *App) tradingProjection(replaying bool) (*projections.Trading, error) {
	return projections.NewTrading(projections.TradingConfig{Pool: a.rmPool, Replaying: replaying,
		Logger: a.log.With("projection", projections.TradingName)})
}

// tradingReads builds a gateway's trading readers (Postgres read models, ClickHouse deal
// history) and its change feed (run it beside the gateway: it wakes RESULT waits and feeds
// the user data streams).
func (a *App) tradingReads() (*projections.TradingReader, *projections.DealsReader, *projections.ChangeFeed, error) {
	trading, err := projections.NewTradingReader(a.pool)
	if err != nil {
		return nil, nil, nil, err
	}
	deals, err := projections.NewDealsReader(a.ch)
	if err != nil {
		return nil, nil, nil, err
	}
	feed, err := projections.NewChangeFeed(projections.ChangeFeedConfig{ConnString: a.cfg.PGURL,
		Logger: a.log.With("role", "gateway", "component", "changefeed")})
	if err != nil {
		return nil, nil, nil, err
	}
	return trading, deals, feed, nil
}
