package projections

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/wait"
)

// A NOTIFY of the trading projection's change rows is for the change feeds of other processes:
// the feed of its own process has the rows handed over once the transaction committed
// (Committed), and drops its own NOTIFYs unread. Yet each one costs every order: Postgres queues
// it at the commit and wakes every listening backend, which sends it on, and the feed's
// goroutine wakes to drop it. Measured at RESULT 200/s (docs/benchmarks.md, thirtieth session,
// fresh instances of one process, alternating): Postgres' backends woke 6.6 times an order
// without it against 7.6 in every run, and used 0.91 ms of CPU an order against 1.00 ms (means
// of 6 and 15 runs, each spread over ±0.15 ms); the answers' p50 did not move beyond the runs'
// spread.
//
// So a transaction NOTIFYs only while another process's change feed is connected: the gate
// looks every NotifyCheck for a connection named as a feed (feedAppName in
// pg_stat_activity) other than this process's own. It NOTIFYs until its first look, whenever
// a look fails, and always when the connection string names the application (the feeds then
// cannot be told apart). A feed that connects is heard of at the next look: until then it
// reads the rows by its poll (ChangeFeedConfig.Poll, 500 ms), as it does a lost notification.

// notifyGate says whether a transaction's change rows are worth a NOTIFY.
type notifyGate struct {
	pool  *pgxpool.Pool
	own   func() uint32 // the backend of this process's change feed (0: none); nil: no feed
	every time.Duration
	skip  atomic.Bool  // no other process's feed was connected at the last look
	looks atomic.Int64 // looks taken
}

// newNotifyGate returns the gate of pool's transactions, or nil (always NOTIFY) when every is
// negative or the connection string names the application.
func newNotifyGate(pool *pgxpool.Pool, own func() uint32, every time.Duration) *notifyGate {
	if every < 0 || pool.Config().ConnConfig.RuntimeParams["application_name"] != "" {
		return nil
	}
	return &notifyGate{pool: pool, own: own, every: every}
}

// needed reports whether a transaction committing now should NOTIFY its change rows.
func (g *notifyGate) needed() bool { return g == nil || !g.skip.Load() }

// watch looks for other processes' feeds every g.every until ctx ends.
func (g *notifyGate) watch(ctx context.Context) {
	if g == nil {
		return
	}
	for {
		others, err := g.othersListen(ctx)
		g.skip.Store(err == nil && !others)
		g.looks.Add(1)
		if wait.For(ctx, g.every) != nil {
			g.skip.Store(false)
			return
		}
	}
}

// othersListen reports whether a change feed other than this process's own is connected.
func (g *notifyGate) othersListen(ctx context.Context) (bool, error) {
	var own uint32
	if g.own != nil {
		own = g.own()
	}
	var others bool
	err := g.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = $1 AND pid <> $2)`,
		feedAppName, int64(own)).Scan(&others)
	return others, err
}
