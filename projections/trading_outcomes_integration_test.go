package projections

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/events/dec"
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

// The relay's copy of a fact that a send caused often reaches its topic before the outcome
// that carries the fact in band reaches its own. A young copy waits for that outcome instead
// of being applied on its own (a transaction, and the outcome queued behind it), and is then
// skipped as applied: its Apply returns only after the outcome's, and the read models hold
// the outcome's facts once.
func TestTradingProjectionRelayCopyWaitsForItsOutcome(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := testenv.MigratedPG(t)
	seedDigits(t, pool)
	now := time.UnixMilli(trT0 + 600)
	p, err := NewTrading(TradingConfig{Pool: pool, Logger: testenv.Logger(), CommandGrace: -1,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	cmd := marketOrder(1001, "op-copy", "#COPY01", "1", 1)
	raw, err := json.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	deal := &events.DealAdded{Fact: events.Fact{Seq: 501, Login: 1001}, DealID: 61, OrderID: 60, PositionID: 60,
		Symbol: "EURUSD", Volume: dec.MustParse("1"), Price: dec.MustParse("1.10000"), Profit: dec.MustParse("0"), Commission: dec.MustParse("0"), Swap: dec.MustParse("0"),
		Comment: "#COPY01", Time: trT0 + 500}
	order := &events.OrderChanged{Fact: events.Fact{Seq: 500, Login: 1001}, Change: events.ChangeDelete, OrderID: 60,
		PositionID: 60, Symbol: "EURUSD", State: 4, VolumeInitial: dec.MustParse("1"), VolumeCurrent: dec.MustParse("0"), Price: dec.MustParse("1.10000"),
		StopLimitPrice: dec.MustParse("0"), SL: dec.MustParse("0"), TP: dec.MustParse("0"), Comment: "#COPY01", TimeSetup: trT0 + 500, TimeDone: trT0 + 500,
		Time: trT0 + 500}

	relayed := make(chan error, 1)
	go func() {
		// The market order's last state alone: no change row names an operation for it, so
		// nothing else would make it wait (a deal waits for its command's owner anyway).
		relayed <- p.Apply(ctx, []batch.Message{
			{Envelope: events.Envelope{Type: order.EventType(), OccurredAt: now.UnixMilli()}, Event: order}})
	}()
	select {
	case err := <-relayed:
		t.Fatalf("the relay's copy was applied (err %v) before the outcome that carries it", err)
	case <-time.After(300 * time.Millisecond):
	}

	out := outcomeOf(1001, "op-copy", "#COPY01", 1, "FILLED")
	out.OrderID, out.DealID, out.Position, out.Price, out.Volume = 60, 61, 60, dp("1.10000"), dp("1")
	out.CommandType, out.Command = cmd.EventType(), raw
	out.Facts = &events.ExecutionFacts{}
	out.Facts.Add(order)
	out.Facts.Add(deal)
	if err := p.Apply(ctx, []batch.Message{{Envelope: events.Envelope{Type: out.EventType()}, Event: out}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-relayed:
		if err != nil {
			t.Fatalf("the relay's copy, once its outcome was applied: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the relay's copy still waits after its outcome was applied")
	}
	var deals, dealChanges int
	var orderSeq int64
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM rm.deals WHERE deal_id = 61),
		(SELECT count(*) FROM rm.changes WHERE kind = 'DEAL' AND login = 1001),
		(SELECT seq FROM rm.orders WHERE order_id = 60)`).Scan(&deals, &dealChanges, &orderSeq); err != nil {
		t.Fatal(err)
	}
	if deals != 1 || dealChanges != 1 || orderSeq != 500 {
		t.Fatalf("deal rows %d, DEAL change rows %d, order seq %d; want 1, 1 and 500", deals, dealChanges, orderSeq)
	}
}
