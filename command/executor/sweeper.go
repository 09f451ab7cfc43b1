package executor

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"time"

	json "github.com/goccy/go-json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/check"
	"tradesvc/infra/wait"
)

// SweeperConfig configures the dispatch sweeper. Pool, Out and Now are required.
type SweeperConfig struct {
	// Pool is the command-side Postgres pool (synchronous commit): cmd.idempotency, where the
	// queued operations are recorded, and cmd.executions, where they are claimed.
	Pool *pgxpool.Pool
	// Out appends the outcomes (to events.TopicExecutions()).
	Out Appender
	// Now is the clock the dispatch window is measured on (the command envelopes' clock).
	Now func() time.Time
	// DispatchWindow is the executor's (default 60s).
	DispatchWindow time.Duration
	// Every is how often a round runs (default a twelfth of the window, between 1 s and 5 s:
	// the window closes a few seconds late at most, and a round, which reads every record of
	// the last Every plus sweepMargin, reads each record twice rather than six times).
	Every time.Duration
	// Lookback is how far back the first round looks for operations left queued (default 1h);
	// later rounds look at what crossed the window since the previous one.
	Lookback time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// Validate reports every missing dependency and bad setting at once.
func (c SweeperConfig) Validate() error {
	var p check.Problems
	p.If(c.Pool == nil, "sweeper: no Postgres pool")
	p.If(c.Out == nil, "sweeper: no appender")
	p.If(c.Now == nil, "sweeper: no clock")
	p.If(c.DispatchWindow < 0 || c.Every < 0 || c.Lookback < 0, "sweeper: negative window, period or lookback")
	return p.Err()
}

// Sweeper closes the dispatch window of operations no executor took, whether or not an
// executor runs (the spec: an order not queued to the trade server within about a minute is
// stored REJECTED -1000). It runs in the gateway role, beside the command handlers that
// queued them. The executor's claim in cmd.executions arbitrates: the sweeper claims the
// attempt "expired, never sent" in that table, outcome included, in the same transaction
// that appends the outcome, so an executor that comes back finds the attempt decided and
// never sends it; and an attempt an executor recorded as sent is never swept. Several
// sweepers (one per gateway) may run: one claim wins.
type Sweeper struct {
	cfg SweeperConfig
	log *slog.Logger
	// since is the database time up to which every record was swept (zero: none yet).
	since time.Time
}

// NewSweeper builds a sweeper.
func NewSweeper(cfg SweeperConfig) (*Sweeper, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.DispatchWindow = cmp.Or(cfg.DispatchWindow, 60*time.Second)
	cfg.Every = cmp.Or(cfg.Every, min(max(cfg.DispatchWindow/12, time.Second), 5*time.Second))
	cfg.Lookback = cmp.Or(cfg.Lookback, time.Hour)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return &Sweeper{cfg: cfg, log: cfg.Logger}, nil
}

// Run sweeps every Every until ctx ends, then returns nil. A failed round is logged and
// the next one covers what it could not.
func (s *Sweeper) Run(ctx context.Context) error {
	failing := false
	wait.Every(ctx, s.cfg.Every, func() {
		n, err := s.Sweep(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			s.log.Error("dispatch sweeper: round failed; retrying every round", "err", err)
		case err == nil && failing:
			s.log.Info("dispatch sweeper: rounds succeed again")
		}
		failing = err != nil
		if n > 0 {
			s.log.Warn("dispatch sweeper: operations not sent within the dispatch window were rejected (-1000)",
				"operations", n, "window", s.cfg.DispatchWindow)
		}
	})
	return nil
}

// sweepMargin is how far back each round looks again before where the previous one ended: a
// record stamped a little after its envelope (the clocks of gateways and the database) is
// swept by the round after.
const sweepMargin = 5 * time.Second

// Sweep runs one round and returns how many operations it rejected.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	var dbNow time.Time
	if err := s.cfg.Pool.QueryRow(ctx, `SELECT now()`).Scan(&dbNow); err != nil {
		return 0, fmt.Errorf("sweeper: read the database clock: %w", err)
	}
	upper := dbNow.Add(-s.cfg.DispatchWindow)
	lower := s.since.Add(-sweepMargin)
	if s.since.IsZero() {
		lower = dbNow.Add(-s.cfg.Lookback)
	}
	ops, err := s.expired(ctx, lower, upper)
	if err != nil {
		return 0, err
	}
	n, err := s.claim(ctx, ops)
	if err != nil {
		return n, err
	}
	s.since = upper
	return n, nil
}

// expiredQuery reads, as command envelopes, the attempts recorded (or raised) in ($1, $2] that no
// executor recorded in cmd.executions ($3: the command types sent, $4: the kinds sent itself).
//
// The record of an operation that is sent itself (its one command) and whose attempt an
// executor recorded is left out before its command is read (almost every record: each round
// looks back over sweepMargin); a sweep's record holds its legs, each checked after.
//
// Each check probes cmd.executions' primary key once per record (OFFSET 0 keeps Postgres from
// turning it into a join or a hashed subplan, both of which read the whole table: a round
// looks at a few thousand records under load, and the planner, counting on an index-only scan
// of the whole of cmd.executions, then preferred hashing it, whose rows, updated at every
// outcome, each cost a heap fetch: 0.5 to 2.2 s a round on 200,000 orders, every second,
// against 10 to 20 ms probed).
const expiredQuery = `WITH recorded AS (
		SELECT operation, operation_id, attempt, command FROM cmd.idempotency WHERE created_at > $1 AND created_at <= $2
		UNION ALL
		SELECT operation, operation_id, attempt, command FROM cmd.idempotency
		WHERE attempt > 1 AND updated_at > $1 AND updated_at <= $2
	)
	SELECT env FROM recorded i CROSS JOIN LATERAL jsonb_array_elements(i.command) env
	WHERE (i.operation <> ALL($4) OR NOT EXISTS (SELECT 1 FROM cmd.executions x
			WHERE x.operation_id = i.operation_id AND x.attempt = i.attempt OFFSET 0))
		AND env->>'type' = ANY($3)
		AND NOT EXISTS (SELECT 1 FROM cmd.executions x WHERE x.operation_id = env->'payload'->>'operationId'
			AND x.attempt = (env->'payload'->>'attempt')::int OFFSET 0)`

// expired reads the attempts recorded (or raised) in (lower, upper] that are now older than
// the dispatch window and that no executor recorded: sent, refused or swept.
func (s *Sweeper) expired(ctx context.Context, lower, upper time.Time) ([]*operation, error) {
	rows, err := s.cfg.Pool.Query(ctx, expiredQuery, lower, upper, sentTypes, sentKinds)
	if err != nil {
		return nil, fmt.Errorf("sweeper: read queued operations: %w", err)
	}
	defer rows.Close()
	now := s.cfg.Now().UnixMilli()
	seen := map[opKey]bool{}
	var out []*operation
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("sweeper: read queued operations: %w", err)
		}
		var env events.Envelope
		if err := json.Unmarshal(raw, &env); err != nil {
			return nil, fmt.Errorf("sweeper: decode a queued command: %w", err)
		}
		ev, err := events.Decode(env)
		if err != nil {
			s.log.Error("sweeper: queued command cannot be decoded; its executor decides it", "type", env.Type, "id", env.ID, "err", err)
			continue
		}
		o, ok := newOperation(env, ev)
		if !ok || o.op.OperationID == "" || seen[o.key()] || o.inWindow(now, s.cfg.DispatchWindow) {
			continue
		}
		seen[o.key()] = true
		out = append(out, &o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sweeper: read queued operations: %w", err)
	}
	return out, nil
}

// claim records each operation as decided, REJECTED -1000 unsent, where no executor has a
// row for it, and appends the outcomes of those it claimed, in one transaction: an append
// that fails undoes the claims (the next round tries again), and until it commits an
// executor's "sent" insert for the same attempt waits, then finds it decided.
func (s *Sweeper) claim(ctx context.Context, ops []*operation) (int, error) {
	if len(ops) == 0 {
		return 0, nil
	}
	now := s.cfg.Now()
	n := len(ops)
	ids, tags, kinds, outcomes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempts, logins := make([]int32, n), make([]int64, n)
	byKey := make(map[opKey]*events.ExecutionOutcome, n)
	for i, o := range ops {
		out := refused(o, trading.StatusRejected, events.CodeUnavailable, msgNotDispatched, now.UnixMilli())
		raw, err := json.Marshal(out)
		if err != nil {
			return 0, fmt.Errorf("sweeper: encode outcome of %s: %w", o.op.OperationID, err)
		}
		ids[i], attempts[i], logins[i], tags[i], kinds[i], outcomes[i] = o.op.OperationID, int32(o.op.Attempt), o.op.Login,
			o.op.Tag, string(o.kind), string(raw)
		byKey[o.key()] = out
	}
	var claimed []events.Event
	err := pgx.BeginFunc(ctx, s.cfg.Pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at, outcome, decided_at)
			SELECT id, attempt, login, tag, kind, $7, outcome::jsonb, $7
			FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[], $5::text[], $6::text[])
			  AS d(id, attempt, login, tag, kind, outcome)
			ON CONFLICT (operation_id, attempt) DO NOTHING
			RETURNING operation_id, attempt`, ids, attempts, logins, tags, kinds, outcomes, now)
		if err != nil {
			return fmt.Errorf("sweeper: claim %d operations: %w", n, err)
		}
		defer rows.Close()
		for rows.Next() {
			var k opKey
			var attempt int32
			if err := rows.Scan(&k.id, &attempt); err != nil {
				return fmt.Errorf("sweeper: claim %d operations: %w", n, err)
			}
			k.attempt = int(attempt)
			claimed = append(claimed, byKey[k])
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sweeper: claim %d operations: %w", n, err)
		}
		if len(claimed) == 0 {
			return nil
		}
		if err := s.cfg.Out.Append(ctx, events.TopicExecutions(), claimed...); err != nil {
			return fmt.Errorf("sweeper: append %d outcomes: %w", len(claimed), err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(claimed), nil
}

// sentKinds are the kinds whose operation is sent itself: its record holds its one command.
var sentKinds = trading.KindNames(func(k trading.Kind) bool { return k.Sent() })

// sentTypes are the command event types the executor sends (its requests table): a sweep's
// own event is sent as its legs, each swept on its own.
var sentTypes = func() []string {
	out := make([]string, 0, len(requests))
	for t := range requests {
		out = append(out, t)
	}
	return out
}()
