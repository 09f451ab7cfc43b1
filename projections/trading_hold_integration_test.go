package projections

import (
	"context"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
)

// A command read from the command topic waits for its outcome while it may still come
// (CommandHold), so that under an executor lagging 100 ms and more its operation is written
// once, by the outcome's fresh batch; with the old 20 ms grace the command was applied on its
// own and its outcome updated the row after reading it back. One whose outcome does not come
// is applied on its own once the hold is over, and shows as queued.
func TestTradingProjectionACommandWaitsForItsOutcomeAndTheOperationIsWrittenOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := testenv.MigratedPG(t)
	seedDigits(t, pool)
	const hold = 3 * time.Second
	p, err := NewTrading(TradingConfig{Pool: pool, Logger: testenv.Logger(), CommandHold: hold})
	if err != nil {
		t.Fatal(err)
	}
	const login = 7201
	// A first operation, applied the long way, teaches the projection the symbol's digits
	// (a batch is fresh only with them known).
	if err := p.Apply(ctx, []batch.Message{outcomeMessage(resultOutcome(t, login, "op-first", "#FIRST1", 9000, 1))}); err != nil {
		t.Fatal(err)
	}
	updates := countOperationUpdates(t, pool)
	// applyCommand hands the command topic's copy of cmd in (appended now), in the background.
	applyCommand := func(cmd *events.OrderRequested) <-chan error {
		m := batch.Message{Envelope: events.Envelope{Type: cmd.EventType()}, Event: cmd, Timestamp: time.Now()}
		recordMessages(t, pool, []batch.Message{m})
		done := make(chan error, 1)
		go func() { done <- p.Apply(ctx, []batch.Message{m}) }()
		return done
	}
	status := func(op string) string {
		var s string
		if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT status FROM rm.operations WHERE operation_id = $1), 'none')`,
			op).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}

	// The outcome comes 500 ms after the command: 25 times the old grace, well inside the hold.
	sent := time.Now()
	done := applyCommand(marketOrder(login, "op-held", "#HELD01", "0.3", 1))
	select {
	case err := <-done:
		t.Fatalf("the command was applied on its own before its outcome came (err %v)", err)
	case <-time.After(500 * time.Millisecond):
	}
	if s := status("op-held"); s != "none" {
		t.Fatalf("while its command waits, the operation reads %s; want no row yet", s)
	}
	if err := p.Apply(ctx, []batch.Message{outcomeMessage(resultOutcome(t, login, "op-held", "#HELD01", 9100, 10))}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the command's copy, once its outcome was applied: %v", err)
		}
	case <-time.After(hold):
		t.Fatal("the command still waits after its outcome was applied")
	}
	if took := time.Since(sent); took >= hold {
		t.Fatalf("the command's copy returned %v after it was handed in: it waited out the hold", took)
	}
	if s := status("op-held"); s != "FILLED" {
		t.Fatalf("operation reads %s after its outcome; want FILLED", s)
	}
	if n := updates(); n != 0 {
		t.Fatalf("rm.operations rows were updated %d times; want 0 (one insert, by the outcome's batch)", n)
	}

	// No outcome: the command is applied on its own once the hold is over.
	sent = time.Now()
	done = applyCommand(marketOrder(login, "op-alone", "#ALONE1", "0.3", 1))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hold + 10*time.Second):
		t.Fatal("a command without an outcome was never applied")
	}
	if took := time.Since(sent); took < hold-100*time.Millisecond {
		t.Fatalf("a command without an outcome was applied %v after it was appended, before the hold (%v) was over", took, hold)
	}
	if s := status("op-alone"); s != "ACCEPTED" {
		t.Fatalf("operation without an outcome reads %s; want ACCEPTED (queued)", s)
	}
}
