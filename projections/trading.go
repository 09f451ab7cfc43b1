package projections

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/infra/check"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/postgres"
	"tradesvc/infra/wait"
	"tradesvc/query"
)

// TradingName is the consumer group (before the deployment prefix) of the trading
// projection. Renaming it re-consumes the three trading topics.
const TradingName = "projection.trading"

// TradingConfig configures the trading projection.
type TradingConfig struct {
	// Pool writes the read models. Its commits may be asynchronous (postgres.Config.AsyncCommit:
	// the answer to a RESULT waits for this projection's commit, not for the disk): the
	// positions the projection applied are written in the same transactions and checked by
	// each, and the projection applies again what a crash of Postgres took back (Positions,
	// Watch).
	Pool *pgxpool.Pool
	// Records reads the idempotency records (cmd.idempotency): a command read ahead of its
	// outcome is applied only when its record names it (trading_orphans.go). Default Pool; a
	// rebuild into a scratch database reads the live ones.
	Records *pgxpool.Pool
	// Replaying: a rebuild from the log writes no change-feed rows, so streams and waiters
	// never see history twice, and keeps no positions (a rebuild applies everything, each
	// event idempotently).
	Replaying bool
	// Committed, when set, is handed the change rows of each transaction once it committed
	// (in this process: the change feed dispatches them at once; other processes hear of
	// them by NOTIFY).
	Committed func(part int32, rows []query.Change)
	// OwnFeed, when set, is the Postgres backend of this process's change feed
	// (ChangeFeed.PID): a transaction NOTIFYs its change rows only while some other feed is
	// connected (notify_gate.go).
	OwnFeed func() uint32
	// NotifyCheck is how often the projection looks for other processes' change feeds
	// (default 1s; negative: every transaction NOTIFYs).
	NotifyCheck time.Duration
	// CommandGrace is the pause between two fetches of the command and relay topics (default
	// 20ms; negative: no pause, and a command read from the command topic is applied at once,
	// as a replay does; Trailing).
	CommandGrace time.Duration
	// CommandHold is how long a command read from the command topic may wait for its outcome (default
	// 1s; never less than CommandGrace; unused when CommandGrace is negative): under load the
	// executor decides 100 ms and more after the append, and a command applied on its own before that
	// costs its own transaction, then its outcome takes the long way (reads, an upsert and an update
	// of the row its fresh batch would have inserted once). So the command topic's consumer waits
	// while its outcome may still come first, and applies what is left once the oldest of them is
	// CommandHold old: an ACK'd operation whose executor is late or stopped shows as queued
	// (ACCEPTED, NEW) that much later (holdCommands).
	CommandHold time.Duration
	// OwnerWait is how long a relay's fact waits for the operation its tag names, so that its
	// frame carries C (trading_owners.go; default 10 s).
	OwnerWait time.Duration
	// Stage, when set, is told how long each outcome took from its decision to reach the
	// projection ("consumed") and to the commit that applied it ("projected", metrics).
	Stage func(stage string, took time.Duration)
	// Early, when set, is told of each outcome taken early (trading_early.go): whether it was
	// applied, or left to the consumer (metrics).
	Early func(committed bool)
	// Fresh, when set, is told of each batch planned as fresh (trading_fresh.go): applied in
	// one pipeline, or fenced (its fence failed and it took the long way; metrics).
	Fresh func(fenced bool)
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
	var p check.Problems
	p.If(c.Pool == nil, "projections: trading needs a pool")
	p.If(c.ChangeRetention < 0 || c.PruneEvery < 0, "projections: trading retention and prune interval must not be negative")
	return p.Err()
}

// Trading projects commands, execution outcomes and trade-server facts into rm.operations,
// rm.orders, rm.positions, rm.deals and the change feed rm.changes, one transaction per
// batch (docs/trading.md "Read models"). It is safe for concurrent batches: writers of one
// login are serialised by an advisory lock per login.
type Trading struct {
	cfg       TradingConfig
	digits    *digitsCache
	positions *Positions // nil while replaying
	seen      *seenApplied
	analyzer  *postgres.Analyzer // keeps the read models' statistics current while they are young
	lastPrune atomic.Int64
	comb      combiner
	early     earlyState
	notify    *notifyGate // nil: every transaction NOTIFYs

	heldMu   sync.Mutex
	held     map[topicPartition]batch.Message // the last message of each partition held (Positions.hold)
	heldCtx  context.Context
	flushing bool
}

// NewTrading builds the projection.
func NewTrading(cfg TradingConfig) (*Trading, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.ChangeRetention = cmp.Or(cfg.ChangeRetention, time.Hour)
	cfg.PruneEvery = cmp.Or(cfg.PruneEvery, time.Minute)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Records = cmp.Or(cfg.Records, cfg.Pool)
	cfg.OwnerWait = cmp.Or(cfg.OwnerWait, 10*time.Second)
	if cfg.CommandGrace == 0 && !cfg.Replaying {
		cfg.CommandGrace = 20 * time.Millisecond
	}
	cfg.CommandHold = max(cmp.Or(cfg.CommandHold, time.Second), cfg.CommandGrace)
	t := &Trading{cfg: cfg, digits: newDigitsCache(), seen: newSeenApplied(),
		early: earlyState{pending: map[topicPartition]chan struct{}{}, landed: map[topicPartition]int64{}},
		analyzer: postgres.NewAnalyzer(cfg.Pool, cfg.Logger, "rm.operations", "rm.orders", "rm.deals", "rm.positions",
			"rm.account_balances", "rm.changes")}
	if !cfg.Replaying {
		t.positions = NewPositions(cfg.Pool, TradingName)
		t.positions.OnLoad(t.seen.forgetAll)
		t.notify = newNotifyGate(cfg.Pool, cfg.OwnFeed, cmp.Or(cfg.NotifyCheck, time.Second))
	}
	return t, nil
}

// rewindCheck is how often the trading projection checks that Postgres still holds the
// positions it committed (Positions.Watch).
const rewindCheck = 500 * time.Millisecond

// Watch implements Watching: the projection commits asynchronously (TradingConfig.Pool), and
// a partition whose commits a crash of Postgres took back is applied again from the store
// within rewindCheck of Postgres answering again, whether or not more messages come to it.
// Beside that it looks for other processes' change feeds (notify_gate.go).
func (t *Trading) Watch(ctx context.Context) {
	defer wait.Beside(ctx, t.notify.watch)()
	if t.positions != nil {
		t.positions.Watch(ctx, rewindCheck, t.cfg.Logger)
	}
}

// Positions implements Positioned: where each partition of the three topics stands.
func (t *Trading) Positions() batch.Positions {
	if t.positions == nil {
		return nil
	}
	return t.positions
}

// AppliedFact implements Deduplicating: the relay's copy of a fact applied in band is not
// even decoded.
func (t *Trading) AppliedFact(seq uint64) bool { return !t.cfg.Replaying && t.seen.factSeq(seq) }

// Passed implements Passing: an outcome applied early (trading_early.go) is not decoded
// again when its consumer reads it.
func (t *Trading) Passed(topic string, partition int32, offset int64) bool {
	return t.positions.passed(topic, partition, offset)
}

// Topics the projection reads.
func (t *Trading) Topics() []events.Topic {
	return []events.Topic{events.TopicCommands(), events.TopicExecutions(), events.TopicTrades()}
}

// Trailing implements Trailing: a command read from the command topic waits for its outcome, which
// brings it first (holdCommands), so the command topic is fetched at most once per CommandGrace
// instead of once per command (a wake-up of the broker and of this consumer per order, for a copy
// that is dropped). The relay's topic trails too: nearly all of it is copies of facts an outcome
// brought in band (left undecoded, AppliedFact), so fetching it as each copy lands woke the broker
// and this consumer once more per order; what only the relay brings (SL/TP, stop-outs, triggers,
// deposits) comes at once after a quiet spell, and under a steady flow after the pause and the
// fetch already waiting (at most about 120 ms later, docs/trading.md).
func (t *Trading) Trailing() ([]events.Topic, time.Duration) {
	if t.cfg.CommandGrace <= 0 || t.cfg.Replaying {
		return nil, 0
	}
	return []events.Topic{events.TopicCommands(), events.TopicTrades()}, t.cfg.CommandGrace
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

// Apply writes one batch, merged with the batches that the other partitions' and topics'
// consumers hand in meanwhile (combine.go), in one transaction.
func (t *Trading) Apply(ctx context.Context, msgs []batch.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if err := t.awaitEarly(ctx, msgs); err != nil {
		return fmt.Errorf("trading projection: %w", err)
	}
	if t.cfg.Stage != nil {
		now := t.cfg.Now().UnixMilli()
		for _, m := range msgs {
			if out, ok := m.Event.(*events.ExecutionOutcome); ok && !t.positions.passed(m.Topic, m.Partition, m.Offset) {
				t.cfg.Stage("consumed", time.Duration(now-out.DecidedAt)*time.Millisecond)
			}
		}
	}
	if !t.cfg.Replaying {
		if err := t.awaitOwners(ctx, msgs); err != nil {
			return fmt.Errorf("trading projection: %w", err)
		}
	}
	t.holdCommands(ctx, msgs)
	msgs, err := unrecorded(ctx, t.cfg.Records, msgs, t.seen.command, t.cfg.Now())
	if err == nil {
		err = voided(ctx, t.cfg.Pool, msgs)
	}
	if err != nil {
		return fmt.Errorf("trading projection: %w", err)
	}
	t.seen.voided(msgs)
	return t.comb.combine(ctx, msgs, t.apply)
}

// holdCommands waits while a command of msgs that no transaction applied yet may still come
// with its outcome (CommandHold): until every such command was applied by a commit meanwhile
// (its outcome carried it: the command's own copy then costs nothing), or the oldest of those
// left is CommandHold old. Only the command topic's consumer waits: its next batch takes what
// arrived meanwhile, and the other topics' consumers go on (their commits wake it).
func (t *Trading) holdCommands(ctx context.Context, msgs []batch.Message) {
	if t.cfg.CommandGrace <= 0 {
		return
	}
	var waiting []batch.Message
	for _, m := range msgs {
		if _, ok := m.Event.(events.Command); ok {
			waiting = append(waiting, m)
		}
	}
	for len(waiting) > 0 {
		committed := t.seen.nextCommit() // before the check: a commit after it wakes the wait
		var oldest time.Time
		left := waiting[:0]
		for _, m := range waiting {
			if t.seen.command(m.Event) {
				continue
			}
			if len(left) == 0 || m.Timestamp.Before(oldest) {
				oldest = m.Timestamp
			}
			left = append(left, m)
		}
		waiting = left
		if len(waiting) == 0 {
			return
		}
		until := oldest.Add(t.cfg.CommandHold)
		if !time.Now().Before(until) || wait.UntilOrFor(ctx, committed, time.Until(until)) != nil {
			return
		}
	}
}

// apply writes messages (of any partitions) in one transaction: the positions they move,
// raw facts (an outcome's in-band facts with it), the derived columns of every operation
// they touched, then the change feed of each partition; once it committed, the change rows
// go to Committed and NOTIFY.
func (t *Trading) apply(ctx context.Context, msgs []batch.Message) error {
	var adv *advance
	var items []*tradingItem
	var rows map[int32][]changeRow
	// With every position known, what the batch applies is known before a transaction is
	// opened: a batch of copies only (a relay's copies of in-band facts, commands an outcome
	// carried) opens none (Positions.hold).
	var logins []int64
	prepared := false
	if t.positions != nil {
		if kept, ok := t.positions.knownPast(msgs); ok {
			var err error
			if items, logins, err = tradingItems(kept, t.seen); err != nil {
				return fmt.Errorf("trading projection: %w", err)
			}
			if len(items) == 0 && len(kept) == 0 {
				return nil // applied already, every one of them
			}
			if len(items) == 0 && t.positions.hold(kept, t.cfg.Now()) {
				t.flushLater(ctx, kept)
				return nil
			}
			prepared = true
			// A fresh batch goes in one pipeline (trading_fresh.go); when its fence finds it
			// is not, the long way below applies it, from items made anew.
			if fb, ok := t.planFresh(items); ok {
				adv, rows, err := t.applyFresh(ctx, msgs, items, logins, fb)
				if err == nil {
					t.freshDone(false)
					t.committed(ctx, msgs, adv, items, rows)
					return nil
				}
				if !errors.Is(err, errNotFresh) {
					return fmt.Errorf("trading projection: %w", t.positions.failed(adv, err))
				}
				t.freshDone(true)
				if items, logins, err = tradingItems(kept, t.seen); err != nil {
					return fmt.Errorf("trading projection: %w", err)
				}
			}
		}
	}
	err := t.inPipeTx(ctx, func(tx *pipeTx) error {
		kept := msgs
		if t.positions != nil {
			var err error
			if kept, adv, err = t.positions.plan(ctx, tx, msgs); err != nil {
				return err
			}
		}
		if !prepared {
			var err error
			if items, logins, err = tradingItems(kept, t.seen); err != nil {
				return err
			}
		}
		// Two round trips inside the transaction: the positions, the logins' locks, every
		// fact and the reads the derivation needs in one pipeline; then the derived columns
		// and the change feed in another. The locks (ascending, so concurrent batches never
		// deadlock) serialise the writers of one login for as short a time as that.
		b := &pgx.Batch{}
		if adv != nil {
			t.positions.queue(b, adv, false)
		}
		queueFacts(b, logins, items)
		tc := touchedBy(items)
		var ops []*loadedOp
		if !tc.empty() {
			queueLoadOperations(b, tc, foldedOutcomes(items), &ops)
		}
		owners := map[loginTag]tagOwner{}
		if !t.cfg.Replaying {
			t.queueTagOwners(b, items, owners)
		}
		if err := tx.send(ctx, b); err != nil {
			return fmt.Errorf("apply facts: %w", err)
		}
		if adv != nil {
			if err := adv.check(); err != nil {
				return err
			}
		}
		if !t.cfg.Replaying && ownerPending(items, owners, t.cfg.Now(), t.cfg.OwnerWait) {
			return errOwnerPending
		}
		if err := t.digits.load(ctx, tx, opSymbols(ops), t.cfg.Now()); err != nil {
			return err
		}
		b = &pgx.Batch{}
		for _, it := range foldOutcomes(items, ops) {
			// Its operation was not found (an outcome older than embedding its command, whose
			// command never came): stored by its own statement, derived when next touched.
			sql, args := outcomeStatement(it.ev.(*events.ExecutionOutcome))
			b.Queue(sql, args...)
		}
		changes := t.queueDerived(b, ops)
		if !t.cfg.Replaying {
			var err error
			if rows, err = t.queueChanges(b, items, owners, changes); err != nil {
				return err
			}
		}
		if err := tx.commit(ctx, b); err != nil {
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
	t.committed(ctx, msgs, adv, items, rows)
	return nil
}

// committed is what follows a transaction that committed msgs: this process's positions and
// copies learn it, the change rows go to the feed.
func (t *Trading) committed(ctx context.Context, msgs []batch.Message, adv *advance, items []*tradingItem,
	rows map[int32][]changeRow) {
	if adv != nil {
		t.positions.committed(adv)
	}
	t.seen.committed(items)
	t.analyzer.Added(len(items))
	if t.cfg.Stage != nil { // the outcomes applied: a copy of one applied before is not an item
		now := t.cfg.Now().UnixMilli()
		for _, it := range items {
			if out, ok := it.ev.(*events.ExecutionOutcome); ok {
				t.cfg.Stage("projected", time.Duration(now-out.DecidedAt)*time.Millisecond)
			}
		}
	}
	t.announce(rows)
	t.maybePrune(ctx)
}

// foldedOutcomes lists the outcomes of items that the update of the derived columns writes.
func foldedOutcomes(items []*tradingItem) []*events.ExecutionOutcome {
	var out []*events.ExecutionOutcome
	for _, it := range items {
		if it.folded {
			out = append(out, it.ev.(*events.ExecutionOutcome))
		}
	}
	return out
}

// inPipeTx runs fn in a pipelined transaction (pipetx.go): fn sends its first pipeline with
// send and its last with commit; a transaction fn leaves uncommitted is rolled back.
func (t *Trading) inPipeTx(ctx context.Context, fn func(*pipeTx) error) error {
	tx, err := beginPipe(ctx, t.cfg.Pool)
	if err != nil {
		return err
	}
	defer tx.close(ctx)
	return fn(tx)
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

// tradingItems are the events of msgs the projection applies, each with its statement and
// its partition: an outcome's command comes before it and its in-band facts after it, in the
// trade server's order; a copy of a fact or a command already applied (seen) is left out.
// logins are the accounts they touch, ascending.
func tradingItems(msgs []batch.Message, seen *seenApplied) ([]*tradingItem, []int64, error) {
	items := make([]*tradingItem, 0, len(msgs))
	var logins []int64
	add := func(ev events.Event, raw []byte, part int32, inBand bool) (*tradingItem, error) {
		if seen.fact(ev) || seen.command(ev) {
			return nil, nil
		}
		sql, args, ok := factStatement(ev)
		table := factTables[ev.EventType()]
		if !ok && table == nil {
			return nil, nil
		}
		if len(raw) == 0 { // not read from the log as such (an in-band fact, a test): encode it
			var err error
			if raw, err = json.Marshal(ev); err != nil {
				return nil, fmt.Errorf("encode %s: %w", ev.EventType(), err)
			}
		}
		it := &tradingItem{ev: ev, raw: raw, sql: sql, args: args, table: table, part: part, inBand: inBand}
		items = append(items, it)
		logins = append(logins, ev.(events.AccountEvent).AccountLogin())
		return it, nil
	}
	for _, m := range msgs {
		if m.Event == nil {
			continue
		}
		out, isOutcome := m.Event.(*events.ExecutionOutcome)
		if isOutcome && out.Void {
			continue // an orphan's (trading_orphans.go): neither it nor its command is applied
		}
		if isOutcome && out.CommandType != "" {
			// The command first: its row is complete (kind, request) before the outcome
			// and the facts are derived, whichever topic's consumer is ahead.
			cmd, err := events.Decode(events.Envelope{Type: out.CommandType, Payload: out.Command})
			if err != nil && !errors.Is(err, events.ErrUnknownType) {
				return nil, nil, fmt.Errorf("command of outcome %s: %w", out.OperationID, err)
			}
			if cmd != nil {
				if _, err := add(cmd, out.Command, m.Partition, false); err != nil {
					return nil, nil, err
				}
			}
		}
		it, err := add(m.Event, m.Envelope.Payload, m.Partition, false)
		if err != nil {
			return nil, nil, err
		}
		if it != nil {
			it.at = m.Envelope.OccurredAt
			if isOutcome && out.CommandType != "" {
				// Its operation's row exists once this transaction's first pipeline ran (its
				// command is applied, or is in this transaction): the outcome is written by the
				// update of the derived columns (foldOutcomes), not by a statement of its own.
				it.sql, it.args, it.folded = "", nil, true
			}
		}
		if isOutcome {
			for _, f := range out.Facts.Events() {
				if _, err := add(f, nil, m.Partition, true); err != nil {
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
	table   *factTable // a trade-server fact: applied with the others of its table (sql empty)
	part    int32      // the partition it came from (an in-band fact and a command: their outcome's)
	inBand  bool       // a fact an outcome carried
	folded  bool       // an outcome written with its operation's derived columns (foldOutcomes)
	at      int64      // when it was appended to the log, Unix ms (0: unknown)
	applied bool
}

// queueFacts queues the logins' locks and every event's statement; each item learns whether
// it changed a row.
func queueFacts(b *pgx.Batch, logins []int64, items []*tradingItem) {
	queueLocks(b, logins)
	queueItems(b, items, false, nil)
}

// queueLocks queues the logins' advisory locks, held until the transaction ends: one
// statement takes them all, in ascending order (concurrent transactions never deadlock).
func queueLocks(b *pgx.Batch, logins []int64) {
	if len(logins) > 0 {
		b.Queue(`SELECT pg_advisory_xact_lock(l) FROM (SELECT l FROM unnest($1::bigint[]) AS l ORDER BY l) s`, logins)
	}
}

// queueItems queues every event's statement (the facts of a table in one); each item learns
// whether it changed a row. fresh: a fresh batch's (trading_fresh.go), whose operations and
// deals go in by plain inserts of the ones it applies (insertedNew), the operations with their
// derived columns (derived: the writes of derive).
func queueItems(b *pgx.Batch, items []*tradingItem, fresh bool, derived []opChange) {
	var tables []*factTable
	facts := map[*factTable][]*tradingItem{}
	for _, it := range items {
		if it.table != nil {
			if fresh && insertedNew[it.table] && !it.applied {
				continue // a second copy of a deal
			}
			if facts[it.table] == nil {
				tables = append(tables, it.table)
			}
			facts[it.table] = append(facts[it.table], it)
			continue
		}
		if it.sql == "" {
			continue // folded
		}
		b.Queue(it.sql, it.args...).Exec(func(ct pgconn.CommandTag) error {
			it.applied = ct.RowsAffected() > 0
			return nil
		})
	}
	for _, t := range tables {
		switch {
		case fresh && t == commandTable:
			args := t.args(facts[t])
			args = append(args, derivedArgs(alignDerived(args[0].([]*string), derived))...)
			queueRows(b, insertOperations, args, len(facts[t]))
		case fresh && insertedNew[t]:
			t.queueInsert(b, facts[t])
		case fresh && t.fresh:
			t.queueFresh(b, facts[t])
		default:
			t.queue(b, facts[t])
		}
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
