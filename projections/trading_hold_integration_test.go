package projections

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

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
	const hold = 3 * time.Second
	pool, p := holdingProjection(t, hold)
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

// An orphan's command (a same-id retry that lost its record's race, trading_orphans.go) is
// never carried by an outcome: its void outcome settles it. The command topic's consumer stops
// waiting for it once that is applied, instead of holding the partition for the whole hold,
// and a copy of the command read after it is skipped: even one older than the records'
// retention, which would otherwise be applied on its own after the void outcome that deletes
// its row, and stay.
func TestTradingProjectionAVoidOutcomeSettlesItsOrphansCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const hold = 5 * time.Second
	pool, p := holdingProjection(t, hold)
	first, orphan := marketOrder(7301, "op-first", "#VOID01", "1", 1), marketOrder(7301, "op-orphan", "#VOID02", "1", 1)
	orphan.ClientOrderID = first.ClientOrderID // the retry of op-first: its record names op-first
	recordCommands(t, pool, first)
	void := outcomeOf(7301, "op-orphan", "#VOID02", 1, "REJECTED")
	void.Void, void.Code = true, int(events.CodeClientOrderIDReused)
	void.CommandType, void.Command = orphan.EventType(), mustJSON(t, orphan)

	sent := time.Now()
	done := make(chan error, 1)
	go func() {
		done <- p.Apply(ctx, []batch.Message{{Envelope: events.Envelope{Type: orphan.EventType()}, Event: orphan, Timestamp: sent}})
	}()
	time.Sleep(300 * time.Millisecond)
	if err := p.Apply(ctx, []batch.Message{outcomeMessage(void)}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(hold):
		t.Fatal("the orphan's command still waits after its void outcome was applied")
	}
	if took := time.Since(sent); took >= hold {
		t.Fatalf("the orphan's command returned %v after it was handed in: it waited out the hold", took)
	}

	// A copy older than the records' retention, read after the void outcome: skipped.
	old := *orphan
	old.Requester.ReceivedAt = time.Now().Add(-49 * time.Hour).UnixMilli()
	if err := p.Apply(ctx, []batch.Message{{Envelope: events.Envelope{Type: old.EventType()}, Event: &old}}); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rm.operations WHERE operation_id = 'op-orphan'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d operations rows of the orphan (%v), want none", n, err)
	}
}

// holdingProjection is a trading projection on a database of its own whose commands wait up
// to hold for their outcome, applied to directly.
func holdingProjection(t *testing.T, hold time.Duration) (*pgxpool.Pool, *Trading) {
	t.Helper()
	pool := testenv.MigratedPG(t)
	seedDigits(t, pool)
	p, err := NewTrading(TradingConfig{Pool: pool, Logger: testenv.Logger(), CommandHold: hold})
	if err != nil {
		t.Fatal(err)
	}
	return pool, p
}
