package executor_test

import (
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/sim"
)

// settleDeadline is the send deadline of exSetup's executors: the default send timeout and
// settle grace, which the tests' clock is moved past.
const settleDeadline = 11 * time.Second

// inDoubt sends a market order of login under the timeout fault and returns it with its
// IN_DOUBT outcome; the fault is cleared again.
func (e *exEnv) inDoubt(login int64, symbol string) (events.Operation, *events.OrderRequested, *events.ExecutionOutcome) {
	e.t.Helper()
	e.fault(sim.Fault{Mode: sim.FaultTimeout})
	op := e.op(login)
	cmd := marketCmd(op, symbol, "BUY", "0.10")
	e.appendCmds(cmd)
	got := e.outcome(op)
	checkOutcome(e.t, got, op, trading.StatusInDoubt, int(events.CodeServerTimeout), 0)
	e.waitRow(op)
	e.fault(sim.Fault{Mode: sim.FaultNone})
	return op, cmd, got
}

// settlement waits for an outcome of op decided after first (a settlement) and fails if none
// comes within d.
func (e *exEnv) settlement(op events.Operation, first *events.ExecutionOutcome, d time.Duration) *events.ExecutionOutcome {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, o := range outcomesOf(e.execs.Snapshot(), op) {
			if o.DecidedAt > first.DecidedAt {
				return o
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	e.t.Fatalf("no settlement of %s within %v", op.OperationID, d)
	return nil
}

// noSettlement fails if an outcome of op decided after first appears within d.
func (e *exEnv) noSettlement(op events.Operation, first *events.ExecutionOutcome, d time.Duration) {
	e.t.Helper()
	time.Sleep(d)
	for _, o := range outcomesOf(e.execs.Snapshot(), op) {
		if o.DecidedAt > first.DecidedAt {
			e.t.Fatalf("settled %+v, want nothing settled", o)
		}
	}
}

// Issue 17 item 1: an attempt left IN_DOUBT by a timeout is settled in the background, with
// no retry: nothing before its send deadline (the trade server may still execute it), then,
// its tag found nowhere, REJECTED -1000 without retcode, a new outcome of the same attempt
// decided later, stored in cmd.executions; the executor never sends it again.
func TestExecutorSettlesATimedOutAttemptAsNotExecutedAfterItsDeadline(t *testing.T) {
	e := exSetup(t)
	e.start()
	const login = 1001
	op, _, first := e.inDoubt(login, "EURUSD")
	e.noSettlement(op, first, 2500*time.Millisecond) // the background ran twice: before the deadline

	e.clock.Add(settleDeadline)
	got := e.settlement(op, first, 10*time.Second)
	checkOutcome(t, got, op, trading.StatusRejected, int(events.CodeUnavailable), 0)
	if got.Msg != "Service unavailable; the trade server confirmed that the request did not execute." || !got.Reconciled {
		t.Errorf("settlement %+v: want the did-not-execute message, reconciled", got)
	}
	if got.SentAt != first.SentAt || got.CommandType != "OrderRequested_v1" || len(got.Command) == 0 {
		t.Errorf("settlement sent at %d (first %d), command %q: want the attempt's send time and command", got.SentAt,
			first.SentAt, got.CommandType)
	}
	if st := e.waitRowStatus(op, string(trading.StatusRejected)); st != string(trading.StatusRejected) {
		t.Fatalf("cmd.executions holds %q after the settlement", st)
	}
	if ps := e.positions(login); len(ps) != 0 {
		t.Fatalf("positions %+v: settling sent the order", ps)
	}
	e.noSettlement(op, got, 2*time.Second) // settled once: it left the unsettled attempts
	if n := len(outcomesOf(e.execs.Snapshot(), op)); n != 2 {
		t.Errorf("%d outcomes, want the IN_DOUBT and its settlement", n)
	}
}

// Issue 17 item 1: the command of an unsettled attempt coming again (what a same-id retry
// appends) makes the executor ask the trade server at once: the order executed after all (the
// trade server ran it late), so the attempt settles FILLED with its deal, before any deadline
// and without the background (the test's clock never reaches the deadline); it is not sent
// again: one position.
func TestExecutorSettlesAnAttemptAtOnceWhenItsCommandComesAgain(t *testing.T) {
	e := exSetup(t)
	e.start()
	const login = 1002
	op, cmd, first := e.inDoubt(login, "GBPUSD")
	late, err := e.sim.Send(e.ctx, mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Symbol: "GBPUSD",
		Type: trading.OrderBuy, Volume: dec.MustParse("0.10"), Comment: trading.WithTag("it", op.Tag)})
	if err != nil || late.Retcode != trading.RetDone {
		t.Fatalf("late execution on the trade server: %+v, %v", late, err)
	}
	e.noSettlement(op, first, 1500*time.Millisecond) // the background does not settle it: no deadline passed

	e.appendCmds(cmd) // the retry's ask
	got := e.settlement(op, first, 10*time.Second)
	checkOutcome(t, got, op, trading.StatusFilled, 0, 0)
	if !got.Reconciled || got.DealID != late.Deal || got.Position != late.Position {
		t.Errorf("settlement %+v, want reconciled with the late deal %d and position %d", got, late.Deal, late.Position)
	}
	decEq(t, "settled volume", *got.Volume, dec.MustParse("0.10"))
	if ps := e.positions(login); len(ps) != 1 {
		t.Fatalf("positions %+v, want the late execution's alone", ps)
	}
}

// Issue 17 item 1: while the trade server cannot be reached nothing is settled, however
// late; once it answers again the attempt is settled.
func TestExecutorSettlesNothingWhileTheTradeServerIsUnreachable(t *testing.T) {
	e := exSetup(t)
	e.start()
	const login = 1003
	op, cmd, first := e.inDoubt(login, "USDJPY")
	e.fault(sim.Fault{Mode: sim.FaultDisconnect})
	e.clock.Add(settleDeadline)
	e.appendCmds(cmd) // a retry's ask changes nothing either
	e.noSettlement(op, first, 2500*time.Millisecond)

	e.fault(sim.Fault{Mode: sim.FaultNone})
	got := e.settlement(op, first, 10*time.Second)
	checkOutcome(t, got, op, trading.StatusRejected, int(events.CodeUnavailable), 0)
	if ps := e.positions(login); len(ps) != 0 {
		t.Fatalf("positions %+v: settling sent the order", ps)
	}
}

// waitRowStatus waits until cmd.executions holds want for op (a settlement replaces the
// stored outcome shortly after its append) and returns the last status read.
func (e *exEnv) waitRowStatus(op events.Operation, want string) string {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, st := e.row(op)
		if st == want || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}
