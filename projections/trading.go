package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
)

// TradingName is the consumer group (before the deployment prefix) of the trading
// projection. Renaming it re-consumes the three trading topics.
const TradingName = "projection.trading"

// The change feed's writers serialise on this advisory lock (the two-key form, so it never
// meets the one-key locks taken per login) and hold it until commit: rm.changes.seq is then
// assigned in commit order and a reader tailing "seq > last" never skips a row that commits
// late.
const (
	changeFeedLockClass int32 = 0x726d // "rm"
	changeFeedLockID    int32 = 1
)

// ChangesChannel is the channel the trading projection notifies after committing changes.
const ChangesChannel = "rm_changes"

// TradingConfig configures the trading projection.
type TradingConfig struct {
	// Pool writes the read models (an asynchronous-commit pool is fine: rm is rebuildable).
	Pool *pgxpool.Pool
	// Replaying: a rebuild from the log writes no change-feed rows, so streams and waiters
	// never see history twice.
	Replaying bool
	// Logger receives pruning problems (default slog.Default()).
	Logger *slog.Logger
	// ChangeRetention is how long change-feed rows are kept (default 1h); PruneEvery how
	// often older ones are deleted (default 1m).
	ChangeRetention time.Duration
	PruneEvery      time.Duration
	// Now is the clock of pruning (default time.Now).
	Now func() time.Time
}

// Validate reports every problem at once.
func (c TradingConfig) Validate() error {
	var errs []error
	if c.Pool == nil {
		errs = append(errs, errors.New("projections: trading needs a pool"))
	}
	if c.ChangeRetention < 0 || c.PruneEvery < 0 {
		errs = append(errs, errors.New("projections: trading retention and prune interval must not be negative"))
	}
	return errors.Join(errs...)
}

// Trading projects commands, execution outcomes and trade-server facts into rm.operations,
// rm.orders, rm.positions, rm.deals and the change feed rm.changes, one transaction per
// batch (docs/trading.md "Read models"). It is safe for concurrent batches: writers of one
// login are serialised by an advisory lock per login.
type Trading struct {
	cfg       TradingConfig
	digits    *digitsCache
	lastPrune atomic.Int64

	combinersMu sync.Mutex
	combiners   map[int32]*combiner
}

// NewTrading builds the projection.
func NewTrading(cfg TradingConfig) (*Trading, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ChangeRetention == 0 {
		cfg.ChangeRetention = time.Hour
	}
	if cfg.PruneEvery == 0 {
		cfg.PruneEvery = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Trading{cfg: cfg, digits: newDigitsCache(), combiners: map[int32]*combiner{}}, nil
}

// Topics the projection reads.
func (t *Trading) Topics() []events.Topic {
	return []events.Topic{events.TopicCommands(), events.TopicExecutions(), events.TopicTrades()}
}

// MaxWait implements Batching: the projection is on the latency path of every RESULT, so a
// batch is whatever is already buffered.
func (t *Trading) MaxWait() time.Duration { return batch.NoWait }

// Reset empties the trading read models before a replay. The change feed is kept: it is
// not rebuilt (a replay writes no change rows) and its seq must keep growing for readers.
func (t *Trading) Reset(ctx context.Context) error {
	_, err := t.cfg.Pool.Exec(ctx, `TRUNCATE rm.operations, rm.orders, rm.positions, rm.deals, rm.account_balances`)
	return err
}

// Apply writes one batch, merged with the batches of the same partition number that the
// other topics' consumers hand in meanwhile (trading_combine.go), in one transaction.
func (t *Trading) Apply(ctx context.Context, msgs []batch.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	return t.combine(ctx, msgs, t.apply)
}

// apply writes messages in one transaction: raw facts, then the derived columns of every
// operation they touched, then the change feed.
func (t *Trading) apply(ctx context.Context, msgs []batch.Message) error {
	items := make([]*tradingItem, 0, len(msgs))
	logins := []int64{}
	var err error
	for _, m := range msgs {
		if m.Event == nil {
			continue
		}
		sql, args, ok := factStatement(m.Event)
		if !ok {
			continue
		}
		raw := m.Envelope.Payload
		if len(raw) == 0 { // not read from the log (a test, a replay tool): the event itself
			if raw, err = json.Marshal(m.Event); err != nil {
				return fmt.Errorf("trading projection: encode %s: %w", m.Event.EventType(), err)
			}
		}
		items = append(items, &tradingItem{ev: m.Event, raw: raw, sql: sql, args: args})
		logins = append(logins, m.Event.(events.AccountEvent).AccountLogin())
	}
	if len(items) == 0 {
		return nil
	}
	slices.Sort(logins)
	logins = slices.Compact(logins)
	// Two round trips inside the transaction: the logins' locks, every fact and the reads the
	// derivation needs in one pipeline; then the derived columns and the change feed in
	// another. The locks (ascending, so concurrent batches never deadlock) serialise the three
	// topics' consumers of one login for as short a time as that.
	err = pgx.BeginFunc(ctx, t.cfg.Pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		queueFacts(b, logins, items)
		tc := touchedBy(items)
		var ops []*loadedOp
		if !tc.empty() {
			queueLoadOperations(b, tc, &ops)
		}
		owners := map[loginTag]tagOwner{}
		if !t.cfg.Replaying {
			queueTagOwners(b, items, owners)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("apply facts: %w", err)
		}
		if err := t.digits.load(ctx, tx, opSymbols(ops), t.cfg.Now()); err != nil {
			return err
		}
		b = &pgx.Batch{}
		changes := t.queueDerived(b, ops)
		if !t.cfg.Replaying {
			if err := t.queueChanges(b, items, owners, changes); err != nil {
				return err
			}
		}
		if b.Len() == 0 {
			return nil
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("write derived operations and the change feed: %w", err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("trading projection: %w", err)
	}
	t.maybePrune(ctx)
	return nil
}

// tradingItem is one event of a batch, its statement, and whether it changed a read model.
type tradingItem struct {
	ev      events.Event
	raw     []byte // the event's payload as the log holds it (a change row stores it)
	sql     string
	args    []any
	applied bool
}

// queueFacts queues the logins' locks and every event's statement; each item learns whether
// it changed a row.
func queueFacts(b *pgx.Batch, logins []int64, items []*tradingItem) {
	// rm is rebuildable from the log: losing the last milliseconds in a crash costs a replay.
	b.Queue("SET LOCAL synchronous_commit = off")
	for _, l := range logins {
		b.Queue("SELECT pg_advisory_xact_lock($1)", l)
	}
	for _, it := range items {
		b.Queue(it.sql, it.args...).Exec(func(ct pgconn.CommandTag) error {
			it.applied = ct.RowsAffected() > 0
			return nil
		})
	}
}

// maybePrune deletes change-feed rows older than the retention, at most every PruneEvery.
func (t *Trading) maybePrune(ctx context.Context) {
	if t.cfg.Replaying {
		return
	}
	now := t.cfg.Now().UnixMilli()
	last := t.lastPrune.Load()
	if now-last < t.cfg.PruneEvery.Milliseconds() || !t.lastPrune.CompareAndSwap(last, now) {
		return
	}
	_, err := t.cfg.Pool.Exec(ctx, `DELETE FROM rm.changes WHERE created_at < now() - $1::bigint * interval '1 millisecond'`,
		t.cfg.ChangeRetention.Milliseconds())
	if err != nil && ctx.Err() == nil {
		t.cfg.Logger.Warn("trading projection: prune the change feed", "err", err)
	}
}

// Ping implements Pinger: the read-model database answers.
func (t *Trading) Ping(ctx context.Context) error { return t.cfg.Pool.Ping(ctx) }
