package projections

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
	"tradesvc/query"
)

// earlyTopic stands for the executions topic (its physical name) in these tests.
const earlyTopic = "early.executions"

// earlyProjection is a trading projection on a database of its own that keeps positions
// (the consumer's and the early path's), counting its early outcomes and change rows.
type earlyProjection struct {
	pool *pgxpool.Pool
	p    *Trading

	mu        sync.Mutex
	early     []bool // each early outcome: committed, or left to the consumer
	changes   int    // change rows handed to Committed
	projected int    // outcomes timed to their commit ("projected")
}

func newEarlyProjection(t *testing.T) *earlyProjection {
	t.Helper()
	pool := testenv.MigratedPG(t)
	seedDigits(t, pool)
	e := &earlyProjection{pool: pool}
	p, err := NewTrading(TradingConfig{Pool: pool, Logger: testenv.Logger(), CommandGrace: -1,
		Early: func(committed bool) {
			e.mu.Lock()
			e.early = append(e.early, committed)
			e.mu.Unlock()
		},
		Committed: func(_ int32, rows []query.Change) {
			e.mu.Lock()
			e.changes += len(rows)
			e.mu.Unlock()
		},
		Stage: func(stage string, _ time.Duration) {
			e.mu.Lock()
			if stage == "projected" {
				e.projected++
			}
			e.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	return e
}

// counts returns the early outcomes so far and the change rows handed on.
func (e *earlyProjection) counts() ([]bool, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]bool(nil), e.early...), e.changes
}

// projectedCount returns how many outcomes were timed to their commit.
func (e *earlyProjection) projectedCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.projected
}

// consume applies msgs as the consumer hands them in.
func (e *earlyProjection) consume(t *testing.T, msgs ...batch.Message) {
	t.Helper()
	if err := e.p.Apply(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
}

// early hands env to the projection as the executor does before its append, and reports where
// it landed; it returns once the projection applied it or left it to the consumer.
func (e *earlyProjection) handEarly(t *testing.T, env events.Envelope, at int32, offset int64, appendErr error) {
	t.Helper()
	landed := e.p.Early(context.Background(), earlyTopic, 0, env)
	if landed == nil {
		t.Fatal("the outcome was not taken early")
	}
	landed(at, offset, appendErr)
	if err := e.p.awaitEarly(context.Background(), []batch.Message{{Topic: earlyTopic, Partition: 0}}); err != nil {
		t.Fatal(err)
	}
}

// storedNext is where the projection's position on the test partition stands in Postgres.
func (e *earlyProjection) storedNext(t *testing.T) int64 {
	t.Helper()
	var next int64
	if err := e.pool.QueryRow(context.Background(), `SELECT next_offset FROM rm.projection_offsets
		WHERE projection = $1 AND topic = $2 AND partition = 0`, TradingName, earlyTopic).Scan(&next); err != nil {
		t.Fatal(err)
	}
	return next
}

// operationStored reports whether op's operation is in the read model.
func (e *earlyProjection) operationStored(t *testing.T, op string) bool {
	t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM rm.operations WHERE operation_id = $1`, op).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// envelopeOf wraps out as the executor's appender does.
func envelopeOf(t *testing.T, out *events.ExecutionOutcome) events.Envelope {
	t.Helper()
	env, err := events.Wrap(out, time.UnixMilli(trT0), out.OperationID, "", "executor/test")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// logged is env as the consumer reads it back from offset of the test partition.
func logged(t *testing.T, env events.Envelope, offset int64) batch.Message {
	t.Helper()
	ev, err := events.Decode(env)
	if err != nil {
		t.Fatal(err)
	}
	return batch.Message{Topic: earlyTopic, Partition: 0, Offset: offset, Timestamp: time.UnixMilli(trT0), Envelope: env, Event: ev}
}

// An outcome the executor appends on its own is applied before its consumer reads it, once,
// with the position moved past it in the same transaction; the consumer's copy is not even
// decoded and changes nothing, and the read models are what the consumer alone leaves.
func TestTradingProjectionAppliesAnOutcomeEarlyOnceAsItsConsumerWould(t *testing.T) {
	e, long := newEarlyProjection(t), newEarlyProjection(t)
	a := envelopeOf(t, resultOutcome(t, 7101, "op-early-a", "#EARLA1", 600, 1))
	b := envelopeOf(t, resultOutcome(t, 7101, "op-early-b", "#EARLB1", 700, 10))
	e.consume(t, logged(t, a, 0))
	long.consume(t, logged(t, a, 0))
	_, before := e.counts()

	landed := e.p.Early(context.Background(), earlyTopic, 0, b)
	if landed == nil {
		t.Fatal("the outcome was not taken early")
	}
	if again := e.p.Early(context.Background(), earlyTopic, 0, a); again != nil {
		t.Fatal("a second outcome was taken early while the first was pending on its partition")
	}
	landed(0, 1, nil)
	if err := e.p.awaitEarly(context.Background(), []batch.Message{{Topic: earlyTopic, Partition: 0}}); err != nil {
		t.Fatal(err)
	}
	early, changes := e.counts()
	if len(early) != 1 || !early[0] {
		t.Fatalf("early outcomes %v, want one committed", early)
	}
	if next := e.storedNext(t); next != 2 {
		t.Fatalf("stored position %d, want 2 (past the outcome at 1)", next)
	}
	if !e.operationStored(t, "op-early-b") || changes == before {
		t.Fatalf("the early outcome left no operation or no change rows (%d → %d)", before, changes)
	}
	applied := readModelRows(t, e.pool, 7101)

	// The consumer reads it back.
	if !e.p.Passed(earlyTopic, 0, 1) || e.p.Passed(earlyTopic, 0, 2) {
		t.Fatal("Passed: the outcome at 1 is not past, or the next offset is")
	}
	e.consume(t, logged(t, b, 1))
	if _, after := e.counts(); after != changes {
		t.Fatalf("the consumer's copy handed on %d more change rows", after-changes)
	}
	sameRows(t, readModelRows(t, e.pool, 7101), applied)
	if next := e.storedNext(t); next != 2 {
		t.Fatalf("stored position %d after the copy, want 2", next)
	}

	// A copy the consumer decoded before the early commit ended (its fetch came first), in a
	// batch with a new outcome: only the new one is applied, and timed.
	c := envelopeOf(t, resultOutcome(t, 7101, "op-early-c", "#EARLC1", 800, 20))
	if n := e.projectedCount(); n != 2 {
		t.Fatalf("%d outcomes timed to their commit, want 2 (a, b)", n)
	}
	e.consume(t, logged(t, b, 1), logged(t, c, 2))
	if n := e.projectedCount(); n != 3 {
		t.Fatalf("%d outcomes timed to their commit, want 3: the copy of b is not applied again", n)
	}

	long.consume(t, logged(t, b, 1))
	long.consume(t, logged(t, c, 2))
	sameRows(t, readModelRows(t, e.pool, 7101), readModelRows(t, long.pool, 7101))
	if early, _ := long.counts(); len(early) != 0 {
		t.Fatalf("the consumer alone counted early outcomes: %v", early)
	}
}

// An outcome that lands behind a record not applied yet, or whose append failed, is left to
// the consumer, which applies it once: the early path commits only at the offset where the
// partition stands. An outcome is not taken early either while one appended before it on its
// partition is not applied yet.
func TestTradingProjectionLeavesAnOutcomeToItsConsumerUnlessItLandsWhereThePartitionStands(t *testing.T) {
	e, long := newEarlyProjection(t), newEarlyProjection(t)
	a := envelopeOf(t, resultOutcome(t, 7102, "op-left-a", "#LEFTA1", 800, 1))
	b := envelopeOf(t, resultOutcome(t, 7102, "op-left-b", "#LEFTB1", 900, 10))
	c := envelopeOf(t, resultOutcome(t, 7103, "op-left-c", "#LEFTC1", 1000, 20))
	d := envelopeOf(t, resultOutcome(t, 7102, "op-left-d", "#LEFTD1", 1100, 30))
	for _, p := range []*earlyProjection{e, long} {
		p.consume(t, logged(t, a, 0))
	}

	// b lands at 2: the record at 1 (c, another executor's) is not applied yet.
	e.handEarly(t, b, 0, 2, nil)
	if early, _ := e.counts(); len(early) != 1 || early[0] {
		t.Fatalf("early outcomes %v, want one left to the consumer", early)
	}
	if e.operationStored(t, "op-left-b") || e.storedNext(t) != 1 {
		t.Fatal("an outcome that landed behind a record not applied was applied, or moved the position")
	}
	e.p.Appended(earlyTopic, 0, 2)
	if e.p.Early(context.Background(), earlyTopic, 0, d) != nil {
		t.Fatal("an outcome was taken early while one appended before it (at 2) is not applied")
	}
	for _, p := range []*earlyProjection{e, long} {
		p.consume(t, logged(t, c, 1), logged(t, b, 2))
	}
	if !e.operationStored(t, "op-left-b") || !e.operationStored(t, "op-left-c") || e.storedNext(t) != 3 {
		t.Fatal("the consumer did not apply what the early path left")
	}

	// d's append fails: nothing is applied, and the retried append's copy is the consumer's.
	e.handEarly(t, d, 0, 0, errors.New("broker down"))
	if early, _ := e.counts(); len(early) != 2 || early[1] {
		t.Fatalf("early outcomes %v, want the second left to the consumer", early)
	}
	if e.operationStored(t, "op-left-d") || e.storedNext(t) != 3 {
		t.Fatal("an outcome whose append failed was applied")
	}
	for _, p := range []*earlyProjection{e, long} {
		p.consume(t, logged(t, d, 3))
	}
	for _, login := range []int64{7102, 7103} {
		sameRows(t, readModelRows(t, e.pool, login), readModelRows(t, long.pool, login))
	}
	if e.storedNext(t) != 4 {
		t.Fatalf("stored position %d, want 4", e.storedNext(t))
	}
}
