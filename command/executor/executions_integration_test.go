package executor

import (
	"context"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/infra/testenv"
)

// Two decisions of one attempt in one store (an outcome and the reconciled copy a redelivered
// command made while the first was being appended): the row keeps the later, and the other
// operations of the statement are stored with it. One INSERT … ON CONFLICT DO UPDATE that
// names a row twice fails as a whole, so before, every outcome of the queue stayed unstored
// (the Postgres-kill fault test logged "ON CONFLICT DO UPDATE command cannot affect row a
// second time" for hundreds of them).
func TestExecutionsStoreTwoDecisionsOfOneAttempt(t *testing.T) {
	ctx := context.Background()
	s, err := newExecutions(testenv.MigratedPG(t))
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(1_800_000_000_000)
	op := func(id string) *operation {
		return &operation{op: events.Operation{OperationID: id, Login: 1001, Tag: "#" + id, Attempt: 1}, kind: "PLACE_ORDER"}
	}
	twice, once := op("twice"), op("once")
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
