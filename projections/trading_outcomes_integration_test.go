package projections

import (
	"context"
	"encoding/json"
	"testing"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
)

// Two outcomes of one operation in one transaction (the executor's, and the reconciled copy
// a redelivered command makes, or a settlement right after an IN_DOUBT): the operation ends
// with the later one, FILLED, as when they come one transaction each. The fault test's
// rebuild from the log found the outcome lost when both were folded into one update (the
// operation was loaded twice and written from the row without it).
func TestTradingProjectionTwoOutcomesOfOneOperationInOneTransaction(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	seedDigits(t, pool)
	p, err := NewTrading(TradingConfig{Pool: pool, Logger: testenv.Logger(), CommandGrace: -1})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := NewTradingReader(pool)
	if err != nil {
		t.Fatal(err)
	}
	cmd := marketOrder(1001, "op-twice", "#TWICE1", "1", 1)
	raw, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	outcome := func(decidedAt int64, reconciled bool) batch.Message {
		out := outcomeOf(1001, "op-twice", "#TWICE1", 1, "FILLED")
		out.DecidedAt, out.Reconciled, out.OrderID, out.DealID, out.Position = decidedAt, reconciled, 42, 43, 42
		out.Price, out.Volume = dp("1.10000"), dp("1")
		out.CommandType, out.Command = cmd.EventType(), raw
		return batch.Message{Envelope: events.Envelope{Type: out.EventType()}, Event: out}
	}
	if err := p.Apply(ctx, []batch.Message{outcome(trT0+500, false), outcome(trT0+510, true)}); err != nil {
		t.Fatal(err)
	}
	op, ok, err := reader.Operation(ctx, "op-twice")
	if err != nil || !ok {
		t.Fatalf("operation: %v %v", ok, err)
	}
	if op.Status != "FILLED" || op.OrderID != 42 {
		t.Fatalf("operation %+v, want FILLED with order 42", op)
	}
	var decided int64
	if err := pool.QueryRow(ctx, `SELECT out_decided_at FROM rm.operations WHERE operation_id = 'op-twice'`).
		Scan(&decided); err != nil {
		t.Fatal(err)
	}
	if decided != trT0+510 {
		t.Fatalf("out_decided_at %d, want the later outcome's %d", decided, trT0+510)
	}
}
