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
	"tradesvc/query"
)

// TradingName is the consumer group (before the deployment prefix) of the trading
// projection. Renaming it re-consumes the three trading topics.
const TradingName = "projection.trading"

// TradingConfig configures the trading projection.
type TradingConfig struct {
	// Pool writes the read models, with synchronous commit: the positions the projection
	// applied are written in the same transactions (Positions).
	Pool *pgxpool.Pool
	// Replaying: a rebuild from the log writes no change-feed rows, so streams and waiters
	// never see history twice, and keeps no positions (a rebuild applies everything, each
	// event idempotently).
	Replaying bool
	// Committed, when set, is handed the change rows of each transaction once it committed
	// (in this process: the change feed dispatches them at once; other processes hear of
	// them by NOTIFY).
	Committed func(part int32, rows []query.Change)
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
	positions *Positions // nil while replaying
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
	t := &Trading{cfg: cfg, digits: newDigitsCache(), combiners: map[int32]*combiner{}}
	if !cfg.Replaying {
		t.positions = NewPositions(cfg.Pool, TradingName)
	}
	return t, nil
}

// Positions implements Positioned: where each partition of the three topics stands.
func (t *Trading) Positions() batch.Positions {
	if t.positions == nil {
		return nil
	}
	return t.positions
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

// apply writes messages in one transaction: the positions they move, raw facts (an
// outcome's in-band facts with it), the derived columns of every operation they touched,
// then the change feed; once it committed, the change rows go to Committed and NOTIFY.
func (t *Trading) apply(ctx context.Context, msgs []batch.Message) error {
	var adv *advance
	var rows []changeRow
	err := t.inTx(ctx, func(tx pgx.Tx) error {
		kept := msgs
		if t.positions != nil {
			var err error
			if kept, adv, err = t.positions.plan(ctx, tx, msgs); err != nil {
				return err
			}
		}
		items, logins, err := tradingItems(kept)
		if err != nil {
			return err
		}
		// Two round trips inside the transaction: the positions, the logins' locks, every
		// fact and the reads the derivation needs in one pipeline; then the derived columns
		// and the change feed in another. The locks (ascending, so concurrent batches never
		// deadlock) serialise the writers of one login for as short a time as that.
		b := &pgx.Batch{}
		if adv != nil {
			t.positions.queue(b, adv)
		}
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
		if b.Len() == 0 {
			return nil
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("apply facts: %w", err)
		}
		if adv != nil {
			if err := adv.check(); err != nil {
				return err
			}
		}
		if err := t.digits.load(ctx, tx, opSymbols(ops), t.cfg.Now()); err != nil {
			return err
		}
		b = &pgx.Batch{}
		changes := t.queueDerived(b, ops)
		if !t.cfg.Replaying {
			if rows, err = t.queueChanges(b, partOf(msgs), items, owners, changes); err != nil {
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
		if t.positions != nil {
			err = t.positions.failed(adv, err)
		}
		return fmt.Errorf("trading projection: %w", err)
	}
	if adv != nil {
		t.positions.committed(adv)
	}
	t.announce(ctx, partOf(msgs), rows)
	t.maybePrune(ctx)
	return nil
}

// inTx runs fn in a transaction; a failure of the COMMIT itself is a commitError (the
// transaction may have taken effect).
func (t *Trading) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return inTx(ctx, t.cfg.Pool, fn)
}

// inTx runs fn in a transaction of pool; a failure of the COMMIT itself is a commitError.
func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return &commitError{err}
	}
	return nil
}

// partOf is the partition number of a batch: every topic of the projection is keyed by
// login with the same partition count, so one partition number carries the same logins in
// each, and the change feed is numbered per partition.
func partOf(msgs []batch.Message) int32 {
	if len(msgs) == 0 {
		return 0
	}
	return msgs[0].Partition
}

// tradingItems are the events of msgs the projection applies, each with its statement: an
// outcome's in-band facts follow it, in the trade server's order. logins are the accounts
// they touch, ascending.
func tradingItems(msgs []batch.Message) ([]*tradingItem, []int64, error) {
	items := make([]*tradingItem, 0, len(msgs))
	var logins []int64
	add := func(ev events.Event, raw []byte) error {
		sql, args, ok := factStatement(ev)
		if !ok {
			return nil
		}
		if len(raw) == 0 { // not read from the log as such (an in-band fact, a test): encode it
			var err error
			if raw, err = json.Marshal(ev); err != nil {
				return fmt.Errorf("encode %s: %w", ev.EventType(), err)
			}
		}
		items = append(items, &tradingItem{ev: ev, raw: raw, sql: sql, args: args})
		logins = append(logins, ev.(events.AccountEvent).AccountLogin())
		return nil
	}
	for _, m := range msgs {
		if m.Event == nil {
			continue
		}
		out, isOutcome := m.Event.(*events.ExecutionOutcome)
		if isOutcome && out.CommandType != "" {
			// The command first: its row is complete (kind, request) before the outcome
			// and the facts are derived, whichever topic's consumer is ahead.
			cmd, err := events.Decode(events.Envelope{Type: out.CommandType, Payload: out.Command})
			if err != nil && !errors.Is(err, events.ErrUnknownType) {
				return nil, nil, fmt.Errorf("command of outcome %s: %w", out.OperationID, err)
			}
			if cmd != nil {
				if err := add(cmd, out.Command); err != nil {
					return nil, nil, err
				}
			}
		}
		if err := add(m.Event, m.Envelope.Payload); err != nil {
			return nil, nil, err
		}
		if isOutcome {
			for _, f := range out.Facts.Events() {
				if err := add(f, nil); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	slices.Sort(logins)
	return items, slices.Compact(logins), nil
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
