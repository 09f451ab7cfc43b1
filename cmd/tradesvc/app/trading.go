package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"tradesvc/command"
	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/wait"
	"tradesvc/projections"
	"tradesvc/query"
)

// tradingProjection builds projection.trading on its own pool (asynchronous commit); a
// replaying instance writes no change-feed rows (streams and waiters never see history
// twice) and stores no positions, so it writes on the read-model pool, synchronously.
func (a *App) tradingProjection(replaying bool) (*projections.Trading, error) {
	pool := a.tradingPool
	if replaying {
		pool = a.rmPool
	}
	// Change rows are pruned at least four times within their retention (at most every minute).
	retention, pruneEvery := a.cfg.Streams.ChangeRetention, time.Duration(0)
	if retention > 0 {
		pruneEvery = min(time.Minute, max(retention/4, 100*time.Millisecond))
	}
	t, err := projections.NewTrading(projections.TradingConfig{Pool: pool, Replaying: replaying,
		Logger: a.log.With("projection", projections.TradingName), Committed: a.publishChanges, OwnFeed: a.changeFeedPID, Stage: a.metrics.OrderStage,
		Fresh: a.metrics.TradingFresh, Early: a.metrics.TradingEarly, ChangeRetention: retention, PruneEvery: pruneEvery})
	if err == nil && !replaying {
		a.trading.Store(t)
	}
	return t, err
}

// earlyProjector is the trading projection of this process, when it runs one, as the
// executor hands it its outcomes (projections.Trading.Early, Appended).
type earlyProjector struct{ a *App }

func (p earlyProjector) Early(ctx context.Context, topic string, partition int32, env events.Envelope) func(int32, int64, error) {
	if t := p.a.trading.Load(); t != nil {
		return t.Early(ctx, topic, partition, env)
	}
	return nil
}

func (p earlyProjector) Appended(topic string, partition int32, offset int64) {
	if t := p.a.trading.Load(); t != nil {
		t.Appended(topic, partition, offset)
	}
}

// publishChanges hands a committed transaction's change rows to this process's change feed
// at once, when this process runs a gateway (other processes hear of them by NOTIFY).
func (a *App) publishChanges(part int32, rows []query.Change) {
	if f := a.changeFeed.Load(); f != nil {
		f.Publish(part, rows)
	}
}

// changeFeedPID is the Postgres backend of this process's change feed (0: none, or between
// its sessions): the trading projection need not NOTIFY it (it hears of the rows from
// publishChanges).
func (a *App) changeFeedPID() uint32 {
	if f := a.changeFeed.Load(); f != nil {
		return f.PID()
	}
	return 0
}

// tradingReads builds a gateway's trading readers (Postgres read models, ClickHouse deal
// history) and its change feed (run it beside the gateway: it wakes RESULT waits and feeds
// the user data streams).
func (a *App) tradingReads() (*projections.TradingReader, *projections.HistoryReader, *projections.ChangeFeed, error) {
	trading, err := projections.NewTradingReader(a.pool)
	if err != nil {
		return nil, nil, nil, err
	}
	deals, err := projections.NewHistoryReader(a.ch)
	if err != nil {
		return nil, nil, nil, err
	}
	feed, err := projections.NewChangeFeed(projections.ChangeFeedConfig{ConnString: a.cfg.PGURL,
		Logger: a.log.With("role", "gateway", "component", "changefeed"), OnReference: a.invalidateReference,
		MaxLag: a.cfg.Streams.UserMaxLag})
	if err != nil {
		return nil, nil, nil, err
	}
	return trading, deals, feed, nil
}

// commandHandlers builds the write side a gateway serves: idempotency records and tags on the
// command-side pool, the log, and the read models the handlers validate against.
func (a *App) commandHandlers(trading *projections.TradingReader, ref *projections.ReferenceReader,
	market *projections.Market, settlements command.SettleAwaiter) (command.Handlers, *command.Records, error) {
	records, err := command.NewRecords(a.pool)
	if err != nil {
		return command.Handlers{}, nil, err
	}
	tags, err := command.NewTags(a.pool)
	if err != nil {
		return command.Handlers{}, nil, err
	}
	host, _ := os.Hostname()
	log, err := kafka.NewAppender(a.pub, fmt.Sprintf("gateway/%s-%d", host, os.Getpid()), a.now)
	if err != nil {
		return command.Handlers{}, nil, err
	}
	deps := command.Deps{Records: records, Tags: tags, Log: log, Operations: trading, Orders: trading,
		Positions: trading, Symbols: ref, Quotes: market, QuoteMaxAge: a.cfg.QuoteMaxAge, Now: a.now,
		Stage: a.metrics.OrderStage, Settlements: settlements}
	if a.early != nil {
		deps.EarlyClaims = a.early
	}
	h, err := command.NewHandlers(deps)
	return h, records, err
}

// purgeRecords deletes long-expired idempotency records every ten minutes until ctx ends
// (every gateway does; the DELETE is idempotent).
func (a *App) purgeRecords(ctx context.Context, records *command.Records) {
	wait.Every(ctx, 10*time.Minute, func() {
		if n, err := records.Purge(ctx); err != nil && ctx.Err() == nil {
			a.log.Warn("purge idempotency records", "err", err)
		} else if n > 0 {
			a.log.Info("purged expired idempotency records", "records", n)
		}
	})
}
