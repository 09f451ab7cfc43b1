package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/command"
	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/group"
	"tradesvc/infra/postgres"
)

// execution is what cmd.executions knows of one (operation, attempt).
type execution struct {
	sentAt  time.Time
	decided bool // the outcome is in the log
	// Of a decided one: its outcome's status and Unanswered flag, and when it was decided
	// (what settling it needs: settle.go).
	status     string
	unanswered bool
	decidedAt  time.Time
}

// executions is the executor's record of what it sent (cmd.executions), on a pool with
// synchronous commit: a "sent" row lost in a crash could send an operation twice.
type executions struct {
	pool     *pgxpool.Pool
	analyzer *postgres.Analyzer
	log      *slog.Logger
	records  *command.Records // the idempotency records a claim stores again (claim)

	storing *group.Drain[decision] // outcomes stored in the background (decidedLater)

	mu sync.Mutex
	// unstored counts, by attempt, the outcomes handed to the flusher and not stored yet
	// (being appended, or appended and being stored): a copy of the command arriving
	// meanwhile finds its row without outcome, yet it is decided. An outcome whose append
	// fails is no longer counted: its batch and every later one of the partition come again.
	unstored map[opKey]int
	// claimedAt remembers the attempts a failed claim may have recorded as sent, and those a
	// claim recorded in a batch that failed before starting them, with the time the claim
	// wrote (ownClaims).
	claimedAt map[opKey][]time.Time
}

// maxClaimTimes bounds the times remembered for one attempt (claimedAt). The first failure
// is the one likely to have committed (Postgres dying as it answered); the retries while it
// is down fail to connect and are not remembered at all.
const maxClaimTimes = 16

// newExecutions builds the store; log receives the outcomes it could not store.
func newExecutions(pool *pgxpool.Pool, log *slog.Logger) (*executions, error) {
	if pool == nil {
		return nil, errors.New("executor: the executions store needs a pool")
	}
	records, err := command.NewRecords(pool)
	if err != nil {
		return nil, err
	}
	s := &executions{pool: pool, analyzer: postgres.NewAnalyzer(pool, nil, "cmd.executions"), log: log, records: records}
	s.storing = group.NewDrain(s.storeDecided)
	return s, nil
}

// sent records that o is about to be sent. It reports false when a row was already there:
// another executor (a partition handed over mid-batch) recorded it first, so this one must
// reconcile rather than send.
func (s *executions) sent(ctx context.Context, o *operation, at time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at)
		VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (operation_id, attempt) DO NOTHING`,
		o.op.OperationID, o.op.Attempt, o.op.Login, o.op.Tag, o.kind, at)
	if err != nil {
		return false, fmt.Errorf("record %s attempt %d as sent: %w", o.op.OperationID, o.op.Attempt, err)
	}
	return tag.RowsAffected() == 1, nil
}

// retake takes over the "sent" row of k, still without outcome and sent at sentAt, as sent
// again at at; false when the row has changed since (another executor took it over, or it was
// decided). Synchronous commit, like every "sent" row: losing it could send twice.
func (s *executions) retake(ctx context.Context, k opKey, sentAt, at time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE cmd.executions SET sent_at = $4
		WHERE operation_id = $1 AND attempt = $2 AND sent_at = $3 AND outcome IS NULL`, k.id, k.attempt, sentAt, at)
	if err != nil {
		return false, fmt.Errorf("take over the sent record of %s attempt %d: %w", k.id, k.attempt, err)
	}
	return tag.RowsAffected() == 1, nil
}

// get reads what cmd.executions knows of one (operation, attempt); ok is false without a row.
func (s *executions) get(ctx context.Context, k opKey) (e execution, ok bool, err error) {
	err = s.pool.QueryRow(ctx, `SELECT sent_at, outcome IS NOT NULL, coalesce(outcome->>'status', ''),
			coalesce(outcome->>'unanswered' = 'true', false), coalesce(decided_at, sent_at)
		FROM cmd.executions WHERE operation_id = $1 AND attempt = $2`, k.id, k.attempt).
		Scan(&e.sentAt, &e.decided, &e.status, &e.unanswered, &e.decidedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return e, false, nil
	}
	if err != nil {
		return e, false, fmt.Errorf("read the execution of %s attempt %d: %w", k.id, k.attempt, err)
	}
	return e, true, nil
}

// claim reads what cmd.executions knows of ops and, in the same statement, records as sent
// (synchronous commit, before anything is sent) the ones without a row for which sure holds
// and whose idempotency record names them (claimRows). It returns the rows that were already
// there, and the operations it recorded with the time their rows carry (sent_at). An
// operation whose client order id's record names another operation is never sent: an orphan
// (a retry's command, appended beside its record's insert, which found the id taken:
// command/submit.go) is marked void, and one whose record a Postgres crash lost and a retry
// then bound to an operation of its own is marked superseded.
func (s *executions) claim(ctx context.Context, ops []operation, sure func(*operation) bool, at time.Time) (map[opKey]execution, map[opKey]time.Time, error) {
	known, recorded, missing, orphans, eligible, err := s.claimRows(ctx, ops, sure, at)
	superseded := map[opKey]bool{}
	refused := map[opKey]error{}
	if err == nil && len(missing) > 0 {
		// A record not there yet: its gateway appends the command beside the record's insert,
		// which may still be under way (or failed), or a Postgres crash lost it (rare). It is
		// stored from the command, by the gateway's own store (an insert under way is waited
		// for, and wins), and those operations are claimed again: each one whose record now
		// names it is recorded; one that a retry's record names (after a crash) is superseded.
		// Should this fail, the first claim's rows are remembered (claimFailed: same time), so
		// that the redelivered batch sends them.
		var again []operation
		for _, o := range ops {
			if missing[o.key()] {
				again = append(again, o)
			}
		}
		var known2 map[opKey]execution
		var recorded2 map[opKey]time.Time
		var missing2, other2 map[opKey]bool
		var restored int
		if again, restored, err = s.restore(ctx, again, refused); err == nil && len(again) > 0 {
			known2, recorded2, missing2, other2, _, err = s.claimRows(ctx, again, sure, at)
		}
		if err == nil {
			maps.Copy(known, known2)
			maps.Copy(recorded, recorded2)
			maps.Copy(superseded, missing2)
			maps.Copy(superseded, other2)
			// Storing a record first is the common race with its gateway's insert (no warning);
			// one that names another operation by then was lost by Postgres, or its gateway
			// failed to store it, and a retry bound the id meanwhile.
			switch {
			case len(superseded) > 0:
				s.log.Warn("idempotency records missing at the claim were bound to retries meanwhile; those retries are sent instead",
					"restored", restored, "superseded", len(superseded))
			case restored > 0:
				s.log.Debug("idempotency records stored from their commands before their gateways' inserts", "restored", restored)
			}
		}
	}
	if err != nil {
		var refused *pgconn.ConnectError
		if !errors.As(err, &refused) || len(recorded) > 0 { // else no statement reached Postgres
			s.claimFailed(ops, eligible, at)
		}
		return nil, nil, err
	}
	for i := range ops {
		ops[i].superseded = superseded[ops[i].key()]
		ops[i].void = orphans[ops[i].key()]
		if err := refused[ops[i].key()]; err != nil {
			ops[i].invalid = err
		}
	}
	s.ownClaims(ops, known, recorded, at)
	s.analyzer.Added(len(recorded))
	return known, recorded, nil
}

// restore stores the idempotency records of ops again from their commands (claim) and
// returns the ops to claim again and how many records it stored. A record Postgres refuses
// (what the gateway's insert met too; it answered -5009) goes in refused, its operation never
// sent: one that failed for good must not stop the partition. Each is then tried on its own,
// so that only the refused ones are left out.
func (s *executions) restore(ctx context.Context, ops []operation, refused map[opKey]error) ([]operation, int, error) {
	record := func(o operation) command.Record {
		return command.Record{APIKeyID: o.op.Requester.APIKeyID, ClientOrderID: o.op.ClientOrderID, Kind: o.kind,
			Login: o.op.Login, OperationID: o.op.OperationID, Tag: o.op.Tag, Attempt: o.op.Attempt,
			Envelopes: []events.Envelope{o.env}}
	}
	recs := make([]command.Record, len(ops))
	for i, o := range ops {
		recs[i] = record(o)
	}
	ins, err := s.records.Insert(ctx, recs)
	if err == nil || !refusal(err) {
		return ops, len(ins), err
	}
	var kept []operation
	restored := 0
	for _, o := range ops {
		ins, err := s.records.Insert(ctx, []command.Record{record(o)})
		switch {
		case err != nil && refusal(err):
			refused[o.key()] = fmt.Errorf("its idempotency record cannot be stored: %w", err)
			s.log.Error("a command whose idempotency record Postgres refuses is not sent", "operationId", o.op.OperationID, "err", err)
		case err != nil:
			return nil, 0, err
		default:
			restored += len(ins)
			kept = append(kept, o)
		}
	}
	return kept, restored, nil
}

// refusal reports an error of Postgres refusing a statement (not going away under it).
func refusal(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && !postgres.ServerGone(pgErr.Code)
}

// claimFailed remembers the attempts a claim that failed may have recorded all the same (its
// statement committed, and the answer was lost: Postgres killed, the connection broken).
// Every such claim's time is kept, not only the last: the retries of a batch fail too while
// Postgres restarts, and the row carries the time of the one that committed.
func (s *executions) claimFailed(ops []operation, eligible []bool, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range ops {
		if i < len(eligible) && eligible[i] {
			s.rememberClaim(ops[i].key(), at)
		}
	}
}

// releaseRows deletes the "sent" rows of keys written at ats and that nothing has touched
// since (no outcome): this executor claimed them and never sent them, and will not (it is
// stopping, or it no longer reads their partition: early.go), so that the next owner simply
// sends them. It runs on its own short deadline (the executor's context may have ended); when
// it fails, the rows stay, remembered as this executor's own (ownClaims): read here again
// they are sent, read by another executor they are reconciled, as after a crash.
func (s *executions) releaseRows(rows map[opKey]time.Time) {
	if len(rows) == 0 {
		return
	}
	var ids []string
	var attempts []int32
	var ats []time.Time
	for k, at := range rows {
		ids, attempts, ats = append(ids, k.id), append(attempts, int32(k.attempt)), append(ats, at)
	}
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	defer cancel()
	_, err := s.pool.Exec(ctx, `DELETE FROM cmd.executions e USING unnest($1::text[], $2::int[], $3::timestamptz[]) AS k(id, attempt, at)
		WHERE e.operation_id = k.id AND e.attempt = k.attempt AND e.outcome IS NULL AND e.sent_at = k.at`, ids, attempts, ats)
	if err != nil {
		s.log.Warn("unsent operations keep their sent rows; the next owner reconciles them", "operations", len(rows), "err", err)
		s.rememberClaims(rows)
	}
}

// rememberClaims remembers the "sent" rows of this executor's claims that may be stored, each
// with the time it carries, and that it never sent (ownClaims): those of an early claim whose
// insert failed, those a release could not delete, and those of a batch that failed before
// starting them.
func (s *executions) rememberClaims(rows map[opKey]time.Time) {
	if len(rows) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, at := range rows {
		s.rememberClaim(k, at)
	}
}

// rememberClaim adds at to k's claim times; the caller holds s.mu.
func (s *executions) rememberClaim(k opKey, at time.Time) {
	if s.claimedAt == nil {
		s.claimedAt = map[opKey][]time.Time{}
	}
	if len(s.claimedAt[k]) < maxClaimTimes {
		s.claimedAt[k] = append(s.claimedAt[k], at)
	}
}

// ownClaims counts as recorded (with the time they carry) the rows a failed claim of this
// process wrote, or a claim whose batch failed before starting them: without outcome, and
// sent at the very time that claim wrote. Nothing was sent for them, so such an attempt is
// sent now, as it would have been, instead of being reconciled as if an executor had died
// after sending it (IN_DOUBT, then REJECTED "did not execute": an acknowledged order the service
// never tried). A row another executor wrote carries that executor's own time. Only within
// abandonedAfter of that claim: later, the settler may be deciding the row as abandoned
// (settle.go), and the row is reconciled instead.
func (s *executions) ownClaims(ops []operation, known map[opKey]execution, recorded map[opKey]time.Time, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.claimedAt) == 0 {
		return
	}
	for i := range ops {
		k := ops[i].key()
		times, ok := s.claimedAt[k]
		if !ok {
			continue
		}
		delete(s.claimedAt, k)
		e, found := known[k]
		if !found || e.decided {
			continue
		}
		if slices.ContainsFunc(times, func(wrote time.Time) bool {
			return e.sentAt.Equal(wrote.Truncate(time.Microsecond)) && at.Sub(wrote) < abandonedAfter
		}) {
			delete(known, k)
			recorded[k] = e.sentAt
		}
	}
}

// claimRows is claim's statement; eligible says which operations it may have recorded.
//
// Before it records an operation of its own record (ownRecord) as sent, it checks that its
// client order id's idempotency record names it. The gateway commits a single operation's
// record asynchronously (command/idempotency.go): a Postgres crash may lose a record
// committed in its last moments, and only the executor's synchronous claim, later in the
// write-ahead log, makes it durable. An operation whose record is missing, or names another
// operation (a retry recorded it first after such a crash), is not recorded: it comes back in
// lost.
func (s *executions) claimRows(ctx context.Context, ops []operation, sure func(*operation) bool, at time.Time) (
	known map[opKey]execution, recorded map[opKey]time.Time, lost, orphans map[opKey]bool, eligible []bool, err error) {
	n := len(ops)
	ids, tags, kinds, coids := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempts, logins, keys := make([]int32, n), make([]int64, n), make([]int64, n)
	eligible, checked := make([]bool, n), make([]bool, n)
	for i := range ops {
		o := &ops[i]
		ids[i], attempts[i], logins[i], tags[i], kinds[i] = o.op.OperationID, int32(o.op.Attempt), o.op.Login, o.op.Tag, string(o.kind)
		eligible[i] = sure(o)
		if checked[i] = eligible[i] && o.ownRecord; checked[i] {
			keys[i], coids[i] = o.op.Requester.APIKeyID, o.op.ClientOrderID
		}
	}
	rows, err := s.pool.Query(ctx, `WITH k AS (
			SELECT * FROM unnest($1::text[], $2::int[], $3::bigint[], $4::text[], $5::text[], $6::bool[],
				$8::bool[], $9::bigint[], $10::text[])
			  AS k(id, attempt, login, tag, kind, eligible, checked, key, coid)),
		ex AS (
			SELECT e.operation_id, e.attempt, e.sent_at, e.outcome IS NOT NULL AS decided,
				coalesce(e.outcome->>'status', '') AS status, coalesce(e.outcome->>'unanswered' = 'true', false) AS unanswered,
				coalesce(e.decided_at, e.sent_at) AS decided_at
			FROM cmd.executions e JOIN k ON e.operation_id = k.id AND e.attempt = k.attempt),
		want AS (
			SELECT k.* FROM k WHERE k.eligible
			AND NOT EXISTS (SELECT 1 FROM ex WHERE ex.operation_id = k.id AND ex.attempt = k.attempt)),
		bound AS (
			SELECT w.id, w.attempt, w.login, w.tag, w.kind FROM want w
			WHERE NOT w.checked OR EXISTS (SELECT 1 FROM cmd.idempotency i
				WHERE i.api_key_id = w.key AND i.client_order_id = w.coid AND i.operation_id = w.id
				AND i.created_at > now() - make_interval(secs => $11))),
		ins AS (
			INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at)
			SELECT b.id, b.attempt, b.login, b.tag, b.kind, $7 FROM bound b
			ON CONFLICT (operation_id, attempt) DO NOTHING
			RETURNING operation_id, attempt)
		SELECT operation_id, attempt, sent_at, decided, status, unanswered, decided_at, 'known' FROM ex
		UNION ALL SELECT operation_id, attempt, $7, false, '', false, $7, 'recorded' FROM ins
		UNION ALL SELECT w.id, w.attempt, $7, false, '', false, $7,
			CASE WHEN EXISTS (SELECT 1 FROM cmd.idempotency i WHERE i.api_key_id = w.key AND i.client_order_id = w.coid
				AND i.created_at > now() - make_interval(secs => $11)) THEN 'other' ELSE 'lost' END FROM want w
			WHERE NOT EXISTS (SELECT 1 FROM bound b WHERE b.id = w.id)`,
		ids, attempts, logins, tags, kinds, eligible, at, checked, keys, coids, command.Retention.Seconds())
	if err != nil {
		return nil, nil, nil, nil, eligible, fmt.Errorf("read and record executions: %w", err)
	}
	defer rows.Close()
	known = make(map[opKey]execution, n)
	recorded = make(map[opKey]time.Time, n)
	lost, orphans = map[opKey]bool{}, map[opKey]bool{}
	for rows.Next() {
		var k opKey
		var attempt int32
		var e execution
		var what string
		if err := rows.Scan(&k.id, &attempt, &e.sentAt, &e.decided, &e.status, &e.unanswered, &e.decidedAt, &what); err != nil {
			return nil, nil, nil, nil, eligible, fmt.Errorf("read and record executions: %w", err)
		}
		k.attempt = int(attempt)
		switch what {
		case "recorded":
			recorded[k] = e.sentAt
		case "lost":
			lost[k] = true
		case "other":
			orphans[k] = true
		default:
			known[k] = e
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, nil, eligible, fmt.Errorf("read and record executions: %w", err)
	}
	return known, recorded, lost, orphans, eligible, nil
}

// decided stores the outcomes of a batch in one statement, once they are in the log. An
// operation that was never sent (refused before sending) gets its row here, so that a
// redelivery of its command is skipped as well.
func (s *executions) decided(ctx context.Context, ds []decision) error {
	ds = lastOfEach(ds)
	if len(ds) == 0 {
		return nil
	}
	n := len(ds)
	ids, kinds, tags, outcomes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	attempts := make([]int32, n)
	logins := make([]int64, n)
	sentAt, decidedAt := make([]time.Time, n), make([]time.Time, n)
	for i, d := range ds {
		// The row records that the operation was decided and how; its facts and command are
		// in the log's outcome (only that it is decided is read back). An outcome still to be
		// settled keeps its command: the background settling rebuilds the attempt from it
		// (settle_store.go).
		slim := *d.outcome
		slim.Facts = nil
		if !unsettledOutcome(d.outcome) {
			slim.Command = nil
		}
		raw, err := json.Marshal(&slim)
		if err != nil {
			return fmt.Errorf("encode outcome of %s: %w", d.op.op.OperationID, err)
		}
		ids[i], attempts[i], logins[i], tags[i], kinds[i] = d.op.op.OperationID, int32(d.op.op.Attempt), d.op.op.Login, d.op.op.Tag, string(d.op.kind)
		outcomes[i] = string(raw)
		decidedAt[i] = time.UnixMilli(d.outcome.DecidedAt)
		sentAt[i] = decidedAt[i] // only used by rows inserted here: operations never sent
		if d.outcome.SentAt != 0 {
			sentAt[i] = time.UnixMilli(d.outcome.SentAt)
		}
	}
	// Asynchronous commit: the outcomes are in the log already, and a row a Postgres crash
	// loses is only a record missing its outcome, which a redelivered command or a retry
	// reconciles (reporting the same outcome again). The sent rows (claim) stay synchronous:
	// losing one could send twice.
	sql, args := storeOutcomes.For(n, []any{ids, attempts, logins, tags, kinds, sentAt, outcomes, decidedAt})
	_, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("store %d outcomes: %w", n, err)
	}
	return nil
}

// storeOutcomes stores decided outcomes (one of them as scalars: postgres.RowsStatement).
var storeOutcomes = postgres.NewRowsStatement(storeOutcomesSQL)

func storeOutcomesSQL(one bool) string {
	const params = `$1::text[], $2::int[], $3::bigint[], $4::text[], $5::text[], $6::timestamptz[], $7::text[], $8::timestamptz[]`
	const names = `id, attempt, login, tag, kind, sent_at, outcome, decided_at`
	return `INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at, outcome, decided_at)
		SELECT id, attempt, login, tag, kind, sent_at, outcome::jsonb, decided_at
		FROM ` + postgres.Rows(params, "d", names, one) + `, ` + postgres.AsyncCommitItem + `
		ON CONFLICT (operation_id, attempt) DO UPDATE SET outcome = EXCLUDED.outcome, decided_at = EXCLUDED.decided_at`
}

// lastOfEach keeps the last decision of each (operation, attempt), in order: the queue may
// hold two (an outcome and the reconciled copy a redelivered command made while the first
// was being appended, or a settlement), and one INSERT … ON CONFLICT DO UPDATE cannot write
// a row twice (the whole statement would fail, every time it is retried).
func lastOfEach(ds []decision) []decision {
	last := make(map[opKey]int, len(ds))
	for i, d := range ds {
		last[d.op.key()] = i
	}
	if len(last) == len(ds) {
		return ds
	}
	out := make([]decision, 0, len(last))
	for i, d := range ds {
		if last[d.op.key()] == i {
			out = append(out, d)
		}
	}
	return out
}

// decision is what the executor decided for one operation: its outcome (with the time it was
// sent, and the facts the send caused) and how long deciding took.
type decision struct {
	op      *operation
	outcome *events.ExecutionOutcome
	took    time.Duration
	at      time.Time // when it was decided
}

// drain waits until the outcomes handed to decidedLater are stored or given up (each batch
// within flushTimeout): a stopping executor leaves no writer behind.
func (s *executions) drain() { s.storing.Wait() }

// appending counts the outcome of d as this executor's from the moment it is handed to the
// flusher (flusher.push): the partition's next batch may start before it is appended
// (batch.Defer), and a copy of the command in it must not be reconciled into a second
// outcome.
func (s *executions) appending(d decision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unstored == nil {
		s.unstored = map[opKey]int{}
	}
	s.unstored[d.op.key()]++
}

// notAppended forgets outcomes whose append failed: the session ends, and their commands,
// redelivered, are decided again (reconciled: their "sent" rows are there).
func (s *executions) notAppended(ds []decision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(ds)
}

// decidedLater stores appended outcomes in the background, one writer at a time, retrying
// until they are stored (or the process ends: a redelivered command then finds its row
// without outcome and is reconciled, which reports the same outcome again).
func (s *executions) decidedLater(ds []decision) { s.storing.Add(ds...) }

// storeDecided is one background store of decidedLater.
func (s *executions) storeDecided(batch []decision) {
	ctx, cancel := context.WithTimeout(context.Background(), flushTimeout)
	err := retry(ctx, func() error { return s.decided(ctx, batch) })
	cancel()
	if err != nil {
		s.log.Warn("outcomes not stored in cmd.executions; a redelivery will reconcile them", "outcomes", len(batch), "err", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forget(batch)
}

// forget takes ds off unstored; s.mu is held.
func (s *executions) forget(ds []decision) {
	for _, d := range ds {
		if s.unstored[d.op.key()]--; s.unstored[d.op.key()] <= 0 {
			delete(s.unstored, d.op.key())
		}
	}
}

// deciding reports whether this executor has an outcome of k that is not stored yet (being
// appended, or being stored).
func (s *executions) deciding(k opKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unstored[k] > 0
}

// unsettledOutcome reports whether out is one the background settling reads back
// (settle_store.go, unsettled): IN_DOUBT, or sent without an answer.
func unsettledOutcome(out *events.ExecutionOutcome) bool {
	return out.Status == string(trading.StatusInDoubt) || out.Unanswered
}
