package executor

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/infra/testenv"
)

// testExecutions is an executions store on a migrated test database, and its pool.
func testExecutions(t *testing.T) (*executions, *pgxpool.Pool) {
	t.Helper()
	pool := testenv.MigratedPG(t)
	s, err := newExecutions(pool, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	return s, pool
}

// Two decisions of one attempt in one store (an outcome and the reconciled copy a redelivered
// command made while the first was being appended): the row keeps the later, and the other
// operations of the statement are stored with it. One INSERT … ON CONFLICT DO UPDATE that
// names a row twice fails as a whole, so before, every outcome of the queue stayed unstored
// (the Postgres-kill fault test logged "ON CONFLICT DO UPDATE command cannot affect row a
// second time" for hundreds of them).
func TestExecutionsStoreTwoDecisionsOfOneAttempt(t *testing.T) {
	ctx := context.Background()
	s, _ := testExecutions(t)
	at := time.UnixMilli(1_800_000_000_000)
	a, b := placeOrder("twice"), placeOrder("once")
	twice, once := &a, &b
	decide := func(o *operation, status string, ms int64) decision {
		return decision{op: o, outcome: &events.ExecutionOutcome{OperationID: o.op.OperationID, Login: 1001, Tag: o.op.Tag,
			Attempt: 1, Status: status, DecidedAt: at.UnixMilli() + ms, SentAt: at.UnixMilli()}}
	}
	if err := s.decided(ctx, []decision{decide(twice, "IN_DOUBT", 10), decide(once, "FILLED", 11),
		decide(twice, "FILLED", 20)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		o      *operation
		status string
	}{{twice, "FILLED"}, {once, "FILLED"}} {
		e, ok, err := s.get(ctx, c.o.key())
		if err != nil || !ok || !e.decided || e.status != c.status {
			t.Errorf("%s: %+v (row %v, %v), want decided %s", c.o.op.OperationID, e, ok, err, c.status)
		}
	}
}

// A claim fails, yet its statement committed (Postgres killed as it answered), and its
// retries fail as well: the claim that succeeds counts the row the first one wrote as its
// own, so the attempt is sent, not reconciled as if an executor had died after sending it
// (the Postgres-kill fault test saw an acknowledged order go IN_DOUBT and then REJECTED "did
// not execute" that way). A row another executor wrote (its own time) stays known, and a
// later redelivery finds the row as usual.
func TestExecutionsClaimAfterAFailedClaimThatCommitted(t *testing.T) {
	ctx := context.Background()
	s, pool := testExecutions(t)
	ops := []operation{placeOrder("mine"), placeOrder("theirs")}
	all := func(*operation) bool { return true }
	failedAt := time.Now() // nanoseconds: Postgres keeps microseconds
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := s.claim(canceled, ops, all, failedAt); err == nil {
		t.Fatal("a claim with a canceled context succeeded")
	}
	// The batch's retries fail too while Postgres restarts; they wrote nothing, and must not
	// make the executor forget the first failure's time (a make test run: the last failed
	// retry's time replaced it, and the row was reconciled, then REJECTED "did not execute").
	if _, _, err := s.claim(canceled, ops, all, failedAt.Add(300*time.Millisecond)); err == nil {
		t.Fatal("a claim with a canceled context succeeded")
	}
	// What the first failed claim's statement wrote after all, and a row of another executor.
	for _, r := range []struct {
		id string
		at time.Time
	}{{"mine", failedAt}, {"theirs", failedAt.Add(3 * time.Millisecond)}} {
		if _, err := pool.Exec(ctx, `INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at)
			VALUES ($1, 1, 1001, $2, 'PLACE_ORDER', $3)`, r.id, "#"+r.id, r.at); err != nil {
			t.Fatal(err)
		}
	}
	known, recorded, err := s.claim(ctx, ops, all, failedAt.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	mine, theirs := ops[0].key(), ops[1].key()
	if _, ok := recorded[theirs]; !has(recorded, mine) || len(known) != 1 || known[theirs].decided || ok {
		t.Fatalf("after the failed claim: known %+v, recorded %v; want mine recorded, theirs known", known, recorded)
	}
	if at := recorded[mine]; !at.Equal(failedAt.Truncate(time.Microsecond)) {
		t.Errorf("mine recorded at %v, want the time its row carries (the failed claim's, %v)", at, failedAt)
	}
	known, recorded, err = s.claim(ctx, ops, all, failedAt.Add(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if has(recorded, mine) || len(known) != 2 {
		t.Fatalf("a later redelivery: known %+v, recorded %v; want both known", known, recorded)
	}
}

// placeOrder is the first attempt of an order placement of login 1001, tagged after its id.
func placeOrder(id string) operation {
	return operation{op: events.Operation{OperationID: id, Login: 1001, Tag: "#" + id, Attempt: 1}, kind: "PLACE_ORDER"}
}

// The claim's common case is one statement: an operation whose idempotency record names it is
// recorded as sent at once, and only one whose record is missing (a Postgres crash lost it)
// comes back, to have its record stored again before it is claimed; the statement stores none.
func TestClaimRecordsAnOperationWhoseRecordNamesItInOneStatement(t *testing.T) {
	ctx := context.Background()
	s, pool := testExecutions(t)
	withRecord := func(id string) operation {
		o := placeOrder(id)
		o.op.ClientOrderID, o.op.Requester.APIKeyID, o.ownRecord = "c-"+id, 1, true
		return o
	}
	bound, missing, orphan := withRecord("bound"), withRecord("missing"), withRecord("orphan")
	if _, err := pool.Exec(ctx, `INSERT INTO cmd.idempotency (api_key_id, client_order_id, operation, login, operation_id,
			tag, attempt, request_hash, command, status) VALUES (1, 'c-bound', 'PLACE_ORDER', 1001, 'bound', '#bound', 1, '\x00', '[]', 'QUEUED'),
			(1, 'c-orphan', 'PLACE_ORDER', 1001, 'earlier', '#early', 1, '\x00', '[]', 'QUEUED')`); err != nil {
		t.Fatal(err)
	}
	all := func(*operation) bool { return true }
	_, recorded, lost, orphans, _, err := s.claimRows(ctx, []operation{bound, missing, orphan}, all, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !has(recorded, bound.key()) || lost[bound.key()] {
		t.Errorf("the operation its record names: recorded %v, lost %v; want recorded by the first statement",
			has(recorded, bound.key()), lost[bound.key()])
	}
	if has(recorded, missing.key()) || !lost[missing.key()] {
		t.Errorf("the operation without a record: recorded %v, lost %v; want lost, for its record to be stored again",
			has(recorded, missing.key()), lost[missing.key()])
	}
	if has(recorded, orphan.key()) || lost[orphan.key()] || !orphans[orphan.key()] || orphans[missing.key()] {
		t.Errorf("the operation whose client order id's record names another: recorded %v, lost %v, orphan %v (the one without a record: orphan %v); want an orphan only",
			has(recorded, orphan.key()), lost[orphan.key()], orphans[orphan.key()], orphans[missing.key()])
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM cmd.idempotency WHERE client_order_id = 'c-missing'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d records of c-missing after the first statement (%v), want none", n, err)
	}
}

// has reports whether the claim recorded k.
func has(recorded map[opKey]time.Time, k opKey) bool {
	_, ok := recorded[k]
	return ok
}
