package executor_test

import (
	"testing"
	"time"

	"tradesvc/command"
	"tradesvc/command/executor"
	"tradesvc/events"
	"tradesvc/events/trading"
)

// queue records and appends a market order of login as the gateway does (idempotency record,
// then the command topic), with no executor taking it.
func (e *exEnv) queue(login int64, symbol string) events.Operation {
	e.t.Helper()
	op := e.op(login)
	envs, err := e.cmds.Wrap(marketCmd(op, symbol, "BUY", "0.10"))
	if err != nil {
		e.t.Fatal(err)
	}
	recs, err := command.NewRecords(e.pool)
	if err != nil {
		e.t.Fatal(err)
	}
	ins, err := recs.Insert(e.ctx, []command.Record{{APIKeyID: 1, ClientOrderID: op.ClientOrderID, Kind: trading.KindPlaceOrder,
		Login: login, OperationID: op.OperationID, Tag: op.Tag, Attempt: 1, Envelopes: envs}})
	if err != nil || len(ins) != 1 {
		e.t.Fatalf("record %s: %v, %v", op.ClientOrderID, ins, err)
	}
	if err := e.cmds.AppendEnvelopes(e.ctx, events.TopicCommands(), envs...); err != nil {
		e.t.Fatal(err)
	}
	return op
}

func (e *exEnv) sweeper(window time.Duration) *executor.Sweeper {
	e.t.Helper()
	sw, err := executor.NewSweeper(executor.SweeperConfig{Pool: e.pool, Out: e.cfg.Out, Now: e.clock.Now,
		DispatchWindow: window, Logger: e.cfg.Logger})
	if err != nil {
		e.t.Fatal(err)
	}
	return sw
}

func (e *exEnv) sweep(sw *executor.Sweeper) int {
	e.t.Helper()
	n, err := sw.Sweep(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// Issue 17 item 2: with no executor running, an order queued longer than the dispatch window
// is claimed by the sweeper and stored REJECTED -1000, unsent; a second sweeper (another
// gateway) claims nothing more; and an executor that comes back, with a window the command
// is still inside, finds it decided and never sends it.
func TestSweeperClosesTheWindowWithoutAnExecutorAndAReturningOneNeverSends(t *testing.T) {
	e := exSetup(t)
	const login = 1004
	const window = time.Second
	op := e.queue(login, "EURUSD")
	sw := e.sweeper(window)
	if n := e.sweep(sw); n != 0 {
		t.Fatalf("swept %d operations inside the window", n)
	}
	e.clock.Add(2 * window)
	time.Sleep(window + 200*time.Millisecond) // the record's own time (the database's) crosses the window too
	if n := e.sweep(sw); n != 1 {
		t.Fatalf("swept %d operations past the window, want 1", n)
	}
	got := e.outcome(op)
	checkOutcome(t, got, op, trading.StatusRejected, int(events.CodeUnavailable), 0)
	if got.Msg != "Service unavailable; the order was not dispatched within the dispatch window." || got.SentAt != 0 ||
		got.CommandType != "OrderRequested_v1" {
		t.Errorf("swept outcome %+v: want the dispatch-window message, unsent, with its command", got)
	}
	if st := e.waitRow(op); st != string(trading.StatusRejected) {
		t.Fatalf("cmd.executions holds %q", st)
	}
	if n := e.sweep(e.sweeper(window)); n != 0 {
		t.Fatalf("another sweeper claimed %d operations again", n)
	}

	e.cfg.DispatchWindow = time.Minute // the returning executor would still send it
	e.start()
	e.settle(login)
	if n := len(outcomesOf(e.execs.Snapshot(), op)); n != 1 {
		t.Errorf("%d outcomes, want the sweeper's alone", n)
	}
	if ps, ds := e.positions(login), e.dealsByTag(login, op.Tag); len(ps) != 0 || len(ds) != 0 {
		t.Fatalf("positions %+v, deals %+v: the swept order was sent", ps, ds)
	}
}

// Issue 17 item 2: an operation an executor recorded (sent, answered) is never swept, however
// old.
func TestSweeperLeavesWhatAnExecutorRecorded(t *testing.T) {
	e := exSetup(t)
	const login = 1001
	e.start()
	op := e.queue(login, "EURUSD")
	checkOutcome(t, e.outcome(op), op, trading.StatusFilled, 0, 10009)
	e.clock.Add(time.Minute)
	time.Sleep(1200 * time.Millisecond)
	if n := e.sweep(e.sweeper(time.Second)); n != 0 {
		t.Fatalf("swept %d operations an executor sent", n)
	}
	if n := len(outcomesOf(e.execs.Snapshot(), op)); n != 1 {
		t.Errorf("%d outcomes, want the executor's alone", n)
	}
}

// A close-all sweep's record holds its own command and its legs, each an operation of its own:
// with no executor, every leg queued longer than the dispatch window is swept, whatever the
// sweep's own row says (the sweeper leaves out early only the records of operations that are
// sent themselves and whose attempt an executor recorded).
func TestSweeperSweepsEachLegOfAQueuedSweep(t *testing.T) {
	e := exSetup(t)
	const login = 1004
	const window = time.Second
	sweep := e.op(login)
	legs := []events.Operation{e.op(login), e.op(login)}
	evs := []events.Event{&events.SweepRequested{Operation: sweep, Legs: []events.SweepLeg{
		{PositionID: 71, OperationID: legs[0].OperationID, ClientOrderID: legs[0].ClientOrderID, Tag: legs[0].Tag},
		{PositionID: 72, OperationID: legs[1].OperationID, ClientOrderID: legs[1].ClientOrderID, Tag: legs[1].Tag}}}}
	for i, leg := range legs {
		leg.Requester = sweep.Requester
		evs = append(evs, &events.PositionCloseRequested{Operation: leg, PositionID: int64(71 + i), Symbol: "EURUSD",
			Side: "SELL", SweepID: sweep.OperationID})
	}
	envs, err := e.cmds.Wrap(evs...)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := command.NewRecords(e.pool)
	if err != nil {
		t.Fatal(err)
	}
	if ins, err := recs.Insert(e.ctx, []command.Record{{APIKeyID: 1, ClientOrderID: sweep.ClientOrderID,
		Kind: trading.KindCloseAll, Login: login, OperationID: sweep.OperationID, Tag: sweep.Tag, Attempt: 1,
		Envelopes: envs}}); err != nil || len(ins) != 1 {
		t.Fatalf("record the sweep: %v, %v", ins, err)
	}
	// The sweep's own operation has a row (its legs' outcomes decide it); its legs do not.
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at)
		VALUES ($1, 1, $2, $3, $4, now())`, sweep.OperationID, login, sweep.Tag, string(trading.KindCloseAll)); err != nil {
		t.Fatal(err)
	}
	e.clock.Add(2 * window)
	time.Sleep(window + 200*time.Millisecond)
	if n := e.sweep(e.sweeper(window)); n != len(legs) {
		t.Fatalf("swept %d operations, want the sweep's %d legs", n, len(legs))
	}
	for _, leg := range legs {
		if st := e.waitRow(leg); st != string(trading.StatusRejected) {
			t.Errorf("leg %s: cmd.executions holds %q, want REJECTED", leg.OperationID, st)
		}
	}
}
