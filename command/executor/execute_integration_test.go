package executor_test

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"tradesvc/command/executor"
	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/sim"
	"tradesvc/infra/testenv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Every kind of operation, sent to the trade server and answered in band, reaches the
// executions topic as one ExecutionOutcome with the answer's status, retcode, tickets, price
// and volume, the time it was sent and the facts it caused, and the simulator holds exactly
// what the operations did.
func TestExecutorSendsEveryKindAndReportsTheAnswer(t *testing.T) {
	e := exSetup(t)
	e.start()
	const login = 1001
	var position int64

	t.Run("market order fills", func(t *testing.T) {
		ask := e.ask("EURUSD")
		op := e.op(login)
		e.appendCmds(marketCmd(op, "EURUSD", "BUY", "0.10"))
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusFilled, 0, 10009)
		if got.OrderID == 0 || got.DealID == 0 || got.Position == 0 || got.Unanswered || got.Reconciled {
			t.Fatalf("fill without tickets or with flags: %+v", got)
		}
		decEq(t, "fill price", *got.Price, ask)
		decEq(t, "fill volume", *got.Volume, dec.MustParse("0.10"))
		ps := e.positions(login)
		if len(ps) != 1 || ps[0].Ticket != got.Position || ps[0].Comment != "it"+op.Tag {
			t.Fatalf("positions %+v, want exactly the one of the outcome, commented with the tag", ps)
		}
		position = got.Position
		recs := e.execs.Snapshot()
		if sents := sentsOf(recs, op); len(sents) != 1 || got.SentAt == 0 || got.SentAt > got.DecidedAt {
			t.Fatalf("sent at %d, decided at %d (%d sent outcomes), want one sent before its decision", got.SentAt,
				got.DecidedAt, len(sents))
		}
		f := got.Facts
		if f == nil || len(f.Deals) != 1 || f.Deals[0].DealID != got.DealID || f.Deals[0].Comment != "it"+op.Tag ||
			len(f.Positions) != 1 || f.Positions[0].PositionID != got.Position || len(f.Accounts) == 0 {
			t.Fatalf("in-band facts %+v, want the deal, the position and the account of the fill", f)
		}
		for _, r := range recs {
			if r.Env.Type == "ExecutionSent_v1" {
				t.Errorf("an ExecutionSent_v1 was appended: sending is a Postgres row and the outcome's sentAt")
			}
			if r.Env.CorrelationID == op.OperationID && r.Key != strconv.Itoa(login) {
				t.Errorf("%s keyed %q, want the login", r.Env.Type, r.Key)
			}
		}
		if st := e.waitRow(op); st != string(trading.StatusFilled) {
			t.Errorf("cmd.executions holds %s", st)
		}
	})

	var orderID int64
	t.Run("pending order is placed", func(t *testing.T) {
		op := e.op(login)
		e.appendCmds(limitCmd(op, "EURUSD", "0.10", "1.08000"))
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusNew, 0, 10008)
		if got.OrderID == 0 || got.DealID != 0 {
			t.Fatalf("placement %+v", got)
		}
		decEq(t, "order price", *got.Price, dec.MustParse("1.08000"))
		decEq(t, "order volume", *got.Volume, dec.MustParse("0.10"))
		oo := e.openOrders(login)
		if len(oo) != 1 || oo[0].Ticket != got.OrderID || oo[0].Type != trading.OrderBuyLimit {
			t.Fatalf("open orders %+v", oo)
		}
		orderID = got.OrderID
	})

	t.Run("pending order is modified", func(t *testing.T) {
		op := e.op(login)
		e.appendCmds(&events.OrderModifyRequested{Operation: op, OrderID: orderID, Symbol: "EURUSD", Side: "BUY",
			Type: "BUY_LIMIT", OrderPrices: events.OrderPrices{Price: decPtr("1.07900"), SL: decPtr("1.07000"),
				TimeInForce: "GTC"}})
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusNew, 0, 10009)
		if got.OrderID != orderID {
			t.Fatalf("modify outcome %+v", got)
		}
		oo := e.openOrders(login)
		if len(oo) != 1 {
			t.Fatalf("open orders %+v", oo)
		}
		decEq(t, "modified price", oo[0].Price, dec.MustParse("1.07900"))
		decEq(t, "modified sl", oo[0].SL, dec.MustParse("1.07000"))
	})

	t.Run("pending order is cancelled", func(t *testing.T) {
		op := e.op(login)
		e.appendCmds(&events.OrderCancelRequested{Operation: op, OrderID: orderID, Symbol: "EURUSD", Side: "BUY", Type: "BUY_LIMIT"})
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusCanceled, 0, 10009)
		if oo := e.openOrders(login); len(oo) != 0 {
			t.Fatalf("open orders after the cancel: %+v", oo)
		}
	})

	t.Run("position is closed whole", func(t *testing.T) {
		op := e.op(login)
		e.appendCmds(&events.PositionCloseRequested{Operation: op, PositionID: position, Symbol: "EURUSD", Side: "SELL"})
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusFilled, 0, 10009)
		if got.Position != position || got.DealID == 0 {
			t.Fatalf("close outcome %+v", got)
		}
		decEq(t, "closed volume", *got.Volume, dec.MustParse("0.10"))
		if ps := e.positions(login); len(ps) != 0 {
			t.Fatalf("positions after the close: %+v", ps)
		}
	})

	t.Run("position is closed in part, then its stops are set", func(t *testing.T) {
		open := e.op(login)
		e.appendCmds(marketCmd(open, "EURUSD", "BUY", "0.20"))
		pos := e.outcome(open).Position
		op := e.op(login)
		e.appendCmds(&events.PositionCloseRequested{Operation: op, PositionID: pos, Symbol: "EURUSD", Side: "SELL", Volume: decPtr("0.05")})
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusFilled, 0, 10009)
		decEq(t, "closed volume", *got.Volume, dec.MustParse("0.05"))
		ps := e.positions(login)
		if len(ps) != 1 || ps[0].Ticket != pos {
			t.Fatalf("positions %+v", ps)
		}
		decEq(t, "remaining volume", ps[0].Volume, dec.MustParse("0.15"))

		sltp := e.op(login)
		e.appendCmds(&events.PositionModifyRequested{Operation: sltp, PositionID: pos, Symbol: "EURUSD", Side: "BUY",
			SL: decPtr("1.08000"), TP: decPtr("1.09000")})
		got = e.outcome(sltp)
		checkOutcome(t, got, sltp, trading.StatusFilled, 0, 10009)
		if got.Position != pos {
			t.Fatalf("sl/tp outcome %+v", got)
		}
		ps = e.positions(login)
		decEq(t, "sl", ps[0].SL, dec.MustParse("1.08000"))
		decEq(t, "tp", ps[0].TP, dec.MustParse("1.09000"))
	})

	t.Run("refusal carries the retcode and its code", func(t *testing.T) {
		before := len(e.positions(login))
		op := e.op(login)
		e.appendCmds(marketCmd(op, "SOLUSD", "BUY", "0.10"))
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusRejected, int(events.CodeForRetcode(10017)), 10017)
		if got.Code != int(events.CodeSymbolTradeDisabled) || got.OrderID != 0 || got.Price != nil {
			t.Fatalf("refusal %+v", got)
		}
		if n := len(e.positions(login)); n != before {
			t.Fatalf("%d positions after a refusal, was %d", n, before)
		}
	})

	// The metrics hook heard of every outcome (it runs right after the outcomes are stored).
	want := []string{"PLACE_ORDER FILLED", "PLACE_ORDER NEW", "MODIFY_ORDER NEW", "CANCEL_ORDER CANCELED",
		"CLOSE_POSITION FILLED", "PLACE_ORDER FILLED", "CLOSE_POSITION FILLED", "MODIFY_POSITION FILLED", "PLACE_ORDER REJECTED"}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Equal(e.reports(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("OnOutcome heard %v, want %v", e.reports(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A command appended longer ago than the dispatch window is refused, REJECTED -1000 without
// a retcode, recorded in cmd.executions, and never reaches the trade server.
func TestExecutorRefusesACommandOlderThanTheDispatchWindow(t *testing.T) {
	e := exSetup(t)
	late, err := kafka.NewAppender(e.pub, "gateway-test", func() time.Time { return e.clock.Now().Add(-61 * time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	op := e.op(1002)
	if err := late.Append(e.ctx, events.TopicCommands(), marketCmd(op, "EURUSD", "BUY", "0.10")); err != nil {
		t.Fatal(err)
	}
	e.start()
	got := e.outcome(op)
	checkOutcome(t, got, op, trading.StatusRejected, int(events.CodeUnavailable), 0)
	if got.Msg != "Service unavailable; the order was not dispatched within the dispatch window." {
		t.Errorf("msg %q", got.Msg)
	}
	if len(sentsOf(e.execs.Snapshot(), op)) != 0 {
		t.Error("ExecutionSent appended for a command that was not sent")
	}
	if ps := e.positions(1002); len(ps) != 0 {
		t.Fatalf("positions %+v: the late command was sent", ps)
	}
	if ds := e.dealsByTag(1002, op.Tag); len(ds) != 0 {
		t.Fatalf("deals %+v: the late command was sent", ds)
	}
	if st := e.waitRow(op); st != string(trading.StatusRejected) {
		t.Fatalf("cmd.executions holds %q", st)
	}
	// A command inside the window is sent.
	fresh := e.op(1002)
	e.appendCmds(marketCmd(fresh, "EURUSD", "BUY", "0.10"))
	checkOutcome(t, e.outcome(fresh), fresh, trading.StatusFilled, 0, 10009)
}

// The same command appended twice (an append the gateway could not confirm and repeated),
// whether both copies arrive in one batch or apart, trades once and has one outcome.
func TestExecutorExecutesADuplicatedCommandOnce(t *testing.T) {
	e := exSetup(t)
	together, apart := e.op(1003), e.op(1003)
	e.appendCmds(marketCmd(together, "EURUSD", "BUY", "0.10"), marketCmd(together, "EURUSD", "BUY", "0.10"))
	e.appendCmds(marketCmd(apart, "GBPUSD", "SELL", "0.10"))
	e.start()
	e.outcome(apart)
	e.appendCmds(marketCmd(apart, "GBPUSD", "SELL", "0.10")) // long after the first was decided
	e.settle(1003)

	recs := e.execs.Snapshot()
	for _, op := range []events.Operation{together, apart} {
		if n, s := len(outcomesOf(recs, op)), len(sentsOf(recs, op)); n != 1 || s != 1 {
			t.Errorf("%s: %d outcomes and %d sends, want one each", op.OperationID, n, s)
		}
		if ds := e.dealsByTag(1003, op.Tag); len(ds) != 1 {
			t.Errorf("%s: %d deals, want 1", op.OperationID, len(ds))
		}
	}
	if ps := e.positions(1003); len(ps) != 2 {
		t.Fatalf("%d positions, want 2", len(ps))
	}
}

// A copy of a command that arrives while the first copy's outcome is still being appended
// (the partition's next batch starts before that append ends) is skipped, not reconciled
// into a second outcome.
func TestExecutorSkipsACopyWhoseOutcomeIsBeingAppended(t *testing.T) {
	e := exSetup(t)
	gate := &heldAppender{Appender: e.cfg.Out, started: make(chan struct{}), release: make(chan struct{})}
	e.cfg.Out = gate
	first, marker := e.op(1003), e.op(1003)
	e.appendCmds(marketCmd(first, "EURUSD", "BUY", "0.10"))
	e.start()
	<-gate.started // the outcome of first is decided and its append held
	// The copy, then a fresh order of the same account behind it: one account's operations
	// run in order, so once the marker has traded the copy has been skipped or reconciled.
	e.appendCmds(marketCmd(first, "EURUSD", "BUY", "0.10"), marketCmd(marker, "EURUSD", "BUY", "0.20"))
	deadline := time.Now().Add(30 * time.Second)
	for len(e.dealsByTag(1003, marker.Tag)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the marker order was not sent")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(gate.release)
	checkOutcome(t, e.outcome(marker), marker, trading.StatusFilled, 0, 10009)
	e.settle(1003)

	recs := e.execs.Snapshot()
	if n, s := len(outcomesOf(recs, first)), len(sentsOf(recs, first)); n != 1 || s != 1 {
		t.Errorf("%d outcomes and %d sends, want one each", n, s)
	}
	if got := outcomesOf(recs, first); len(got) > 0 && got[0].Reconciled {
		t.Errorf("outcome %+v: reconciled, want the in-band answer", got[0])
	}
	if ds := e.dealsByTag(1003, first.Tag); len(ds) != 1 {
		t.Errorf("%d deals, want 1", len(ds))
	}
}

// heldAppender holds its first append until release is closed, and closes started when
// that append begins.
type heldAppender struct {
	executor.Appender
	started, release chan struct{}
	once             sync.Once
}

func (h *heldAppender) Append(ctx context.Context, topic events.Topic, evs ...events.Event) error {
	first := false
	h.once.Do(func() { first = true })
	if first {
		close(h.started)
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Appender.Append(ctx, topic, evs...)
}

// One account's operations run strictly in order, even within one batch: a cancel appended
// right behind the placement of its order finds the order.
func TestExecutorRunsOneAccountsOperationsInOrder(t *testing.T) {
	e := exSetup(t)
	// Orders and positions share one ticket counter: an order of another account shows the
	// ticket the next placement gets.
	probe, err := e.sim.Send(e.ctx, mt5.TradeRequest{Login: 1002, Action: mt5.ActionPending, Symbol: "EURUSD",
		Type: trading.OrderBuyLimit, Volume: dec.MustParse("0.01"), Price: dec.MustParse("1.07000"), Comment: "probe#probe01"})
	if err != nil || probe.Retcode != trading.RetPlaced {
		t.Fatalf("probe order: %+v %v", probe, err)
	}
	next := probe.Order + 1
	place, cancel := e.op(1001), e.op(1001)
	// Both are appended before the executor starts, so its first read holds them together.
	e.appendCmds(limitCmd(place, "EURUSD", "0.10", "1.08000"),
		&events.OrderCancelRequested{Operation: cancel, OrderID: next, Symbol: "EURUSD", Side: "BUY", Type: "BUY_LIMIT"})
	e.start()
	placed := e.outcome(place)
	checkOutcome(t, placed, place, trading.StatusNew, 0, 10008)
	if placed.OrderID != next {
		t.Fatalf("placed order %d, the ticket counter promised %d", placed.OrderID, next)
	}
	checkOutcome(t, e.outcome(cancel), cancel, trading.StatusCanceled, 0, 10009)
	if oo := e.openOrders(1001); len(oo) != 0 {
		t.Fatalf("open orders %+v", oo)
	}
}

// Without an in-band answer: a market order the server executed silently is reconciled by
// its tag (FILLED, Reconciled, no retcode); a pending order on the staging server, which
// cannot look orders up by tag, stays Unanswered with no order id; a timeout with nothing
// executed is IN_DOUBT -5008.
func TestExecutorWithoutAnInBandAnswer(t *testing.T) {
	e := exSetup(t)
	e.start()
	const login = 1004

	t.Run("no answer, executed: reconciled FILLED", func(t *testing.T) {
		e.fault(sim.Fault{Mode: sim.FaultNoAnswer})
		op := e.op(login)
		e.appendCmds(marketCmd(op, "EURUSD", "BUY", "0.30"))
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusFilled, 0, 0)
		ds := e.dealsByTag(login, op.Tag)
		if !got.Reconciled || got.Unanswered || len(ds) != 1 || got.DealID != ds[0].Ticket || got.OrderID != ds[0].Order ||
			got.Position != ds[0].Position {
			t.Fatalf("reconciled outcome %+v, deals %+v", got, ds)
		}
		decEq(t, "price", *got.Price, ds[0].Price)
		decEq(t, "volume", *got.Volume, dec.MustParse("0.30"))
	})

	t.Run("shortfalls, pending placement: Unanswered", func(t *testing.T) {
		e.fault(sim.Fault{Mode: sim.FaultShortfalls})
		op := e.op(login)
		e.appendCmds(limitCmd(op, "EURUSD", "0.10", "1.08000"))
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusNew, 0, 0)
		if !got.Unanswered || got.Reconciled || got.OrderID != 0 {
			t.Fatalf("outcome %+v, want Unanswered without an order id", got)
		}
		if oo := e.openOrders(login); len(oo) != 1 {
			t.Fatalf("open orders %+v: the placement did execute", oo)
		}
	})

	t.Run("timeout, nothing executed: IN_DOUBT -5008", func(t *testing.T) {
		e.fault(sim.Fault{Mode: sim.FaultTimeout})
		op := e.op(login)
		e.appendCmds(marketCmd(op, "GBPUSD", "BUY", "0.10"))
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusInDoubt, int(events.CodeServerTimeout), 0)
		if got.OrderID != 0 || got.Reconciled || got.Unanswered {
			t.Fatalf("outcome %+v", got)
		}
	})

	t.Run("disconnected: REJECTED -5015", func(t *testing.T) {
		e.fault(sim.Fault{Mode: sim.FaultDisconnect})
		op := e.op(login)
		e.appendCmds(marketCmd(op, "GBPUSD", "BUY", "0.10"))
		got := e.outcome(op)
		// The simulator answers a disconnected send with 10031 in band.
		checkOutcome(t, got, op, trading.StatusRejected, int(events.CodeNoConnection), 10031)
	})
}

// An executor stopped after the trade server executed an order but before it answered
// records nothing for it; the next executor over the same topics and database finds the
// "sent" row, reconciles by tag instead of sending again, and reports FILLED: one position.
func TestExecutorRestartedBetweenSentAndOutcomeReconcilesInsteadOfResending(t *testing.T) {
	e := exSetup(t)
	const login = 1002
	e.fault(sim.Fault{Mode: sim.FaultNone, AnswerDelay: time.Hour})
	stop := e.start()
	op := e.op(login)
	e.appendCmds(marketCmd(op, "XAUUSD", "BUY", "0.02"))
	deadline := time.Now().Add(60 * time.Second)
	for len(e.dealsByTag(login, op.Tag)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the order never executed on the simulator")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop() // the executor is waiting for the answer
	if exists, st := e.row(op); !exists || st != "" {
		t.Fatalf("cmd.executions after the stop: exists %v, outcome %q; want the sent row without outcome", exists, st)
	}
	if n := len(outcomesOf(e.execs.Snapshot(), op)); n != 0 {
		t.Fatalf("%d outcomes appended by the stopped executor", n)
	}

	e.fault(sim.Fault{Mode: sim.FaultNone})
	e.start()
	got := e.outcome(op)
	checkOutcome(t, got, op, trading.StatusFilled, 0, 0)
	if !got.Reconciled || got.DealID == 0 || got.Position == 0 {
		t.Fatalf("outcome %+v, want reconciled with its deal and position", got)
	}
	decEq(t, "volume", *got.Volume, dec.MustParse("0.02"))
	if ps := e.positions(login); len(ps) != 1 || ps[0].Ticket != got.Position {
		t.Fatalf("positions %+v, want exactly the one order's", ps)
	}
	if ds := e.dealsByTag(login, op.Tag); len(ds) != 1 {
		t.Fatalf("%d deals under the tag: the order was sent again", len(ds))
	}
	if st := e.waitRow(op); st != string(trading.StatusFilled) {
		t.Fatalf("cmd.executions holds %q", st)
	}
}

// A retry after REJECTED -1000 is the operation's next attempt: it is sent when the first
// attempt never reached the trade server, and not sent again when it did (the earlier
// attempt's deal is found by the tag and reported).
func TestExecutorSecondAttemptSendsOnlyWhenNoEarlierAttemptExecuted(t *testing.T) {
	e := exSetup(t)
	late, err := kafka.NewAppender(e.pub, "gateway-test", func() time.Time { return e.clock.Now().Add(-2 * time.Minute) })
	if err != nil {
		t.Fatal(err)
	}
	const login = 1003
	e.start()

	t.Run("first attempt never sent: the second is", func(t *testing.T) {
		first := e.op(login)
		if err := late.Append(e.ctx, events.TopicCommands(), marketCmd(first, "EURUSD", "BUY", "0.10")); err != nil {
			t.Fatal(err)
		}
		checkOutcome(t, e.outcome(first), first, trading.StatusRejected, int(events.CodeUnavailable), 0)
		second := first
		second.Attempt = 2
		e.appendCmds(marketCmd(second, "EURUSD", "BUY", "0.10"))
		got := e.outcome(second)
		checkOutcome(t, got, second, trading.StatusFilled, 0, 10009)
		if ds := e.dealsByTag(login, first.Tag); len(ds) != 1 {
			t.Fatalf("%d deals under the tag, want 1", len(ds))
		}
	})

	t.Run("first attempt executed after all: the second is not sent", func(t *testing.T) {
		first := e.op(login)
		// The first attempt reached the trade server (the executions show no trace of it).
		res, err := e.sim.Send(e.ctx, mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Symbol: "GBPUSD",
			Type: trading.OrderSell, Volume: dec.MustParse("0.10"), Comment: "it" + first.Tag})
		if err != nil || res.Retcode != trading.RetDone {
			t.Fatalf("first attempt: %+v %v", res, err)
		}
		second := first
		second.Attempt = 2
		e.appendCmds(marketCmd(second, "GBPUSD", "SELL", "0.10"))
		got := e.outcome(second)
		checkOutcome(t, got, second, trading.StatusFilled, 0, 0)
		if !got.Reconciled || got.DealID != res.Deal || got.Position != res.Position {
			t.Fatalf("outcome %+v, want the first attempt's fill (deal %d)", got, res.Deal)
		}
		if ds := e.dealsByTag(login, first.Tag); len(ds) != 1 {
			t.Fatalf("%d deals under the tag: the second attempt was sent", len(ds))
		}
		if n := len(sentsOf(e.execs.Snapshot(), second)); n != 0 {
			t.Fatalf("%d ExecutionSent for an attempt that was not sent", n)
		}
	})
}

// Modifications and removals are idempotent, so after a crash between "sent" and the outcome
// they are simply sent again; the trade server then answers that there is nothing left to
// do (10025 for the modification, 10023 for the order already removed), which means the
// first send was applied: reported done, with that retcode.
func TestExecutorRestartedAfterAModificationSendsItAgainAndReportsItDone(t *testing.T) {
	e := exSetup(t)
	const login = 1001
	placed, err := e.sim.Send(e.ctx, mt5.TradeRequest{Login: login, Action: mt5.ActionPending, Symbol: "EURUSD",
		Type: trading.OrderBuyLimit, Volume: dec.MustParse("0.10"), Price: dec.MustParse("1.08000"), Comment: "it#placed"})
	if err != nil || placed.Retcode != trading.RetPlaced {
		t.Fatalf("placement: %+v %v", placed, err)
	}
	// crashAfterExecuting runs a new executor that is stopped once cond holds on the
	// simulator (the request executed, its answer held back), then clears the delay.
	crashAfterExecuting := func(op events.Operation, cmd events.Event, what string, cond func() bool) {
		t.Helper()
		e.fault(sim.Fault{Mode: sim.FaultNone, AnswerDelay: time.Hour})
		stop := e.start()
		e.appendCmds(cmd)
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s never executed on the simulator", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop()
		if exists, st := e.row(op); !exists || st != "" {
			t.Fatalf("%s: cmd.executions after the stop: exists %v, outcome %q", what, exists, st)
		}
		e.fault(sim.Fault{Mode: sim.FaultNone})
	}

	modify := e.op(login)
	crashAfterExecuting(modify, &events.OrderModifyRequested{Operation: modify, OrderID: placed.Order, Symbol: "EURUSD",
		Side: "BUY", Type: "BUY_LIMIT", OrderPrices: events.OrderPrices{Price: decPtr("1.07950")}}, "the modification", func() bool {
		oo := e.openOrders(login)
		return len(oo) == 1 && dec.String(oo[0].Price) == "1.07950"
	})
	stop := e.start()
	got := e.outcome(modify)
	checkOutcome(t, got, modify, trading.StatusNew, 0, int(trading.RetNoChanges))
	stop()

	cancel := e.op(login)
	crashAfterExecuting(cancel, &events.OrderCancelRequested{Operation: cancel, OrderID: placed.Order, Symbol: "EURUSD",
		Side: "BUY", Type: "BUY_LIMIT"}, "the removal", func() bool { return len(e.openOrders(login)) == 0 })
	e.start()
	got = e.outcome(cancel)
	checkOutcome(t, got, cancel, trading.StatusCanceled, 0, int(trading.RetOrderChanged))
}

// cutOnLookup is the trade server, except that looking up the orders of one tag first takes
// the executor's Postgres away (cut): the moment between a batch's claim and its next write.
type cutOnLookup struct {
	mt5.TradeServer
	tag  string
	cut  func()
	once sync.Once
}

func (c *cutOnLookup) OrdersByTag(ctx context.Context, login int64, tag string) ([]mt5.Order, error) {
	if tag == c.tag {
		c.once.Do(c.cut)
	}
	return c.TradeServer.OrdersByTag(ctx, login, tag)
}

// Regression (make test, Postgres killed -9 while orders flowed): a batch's claim recorded
// its first attempts as sent; then an earlier operation of the same account failed on
// Postgres, and the later ones were never started. The redelivered batch reconciled them as
// if an executor had died after sending them: IN_DOUBT, then REJECTED "did not execute", an
// acknowledged order the service never tried. They are sent now, once.
func TestExecutorSendsWhatAFailedBatchNeverStarted(t *testing.T) {
	sendsWhatAFailedBatchNeverStarted(t, false)
}

// The same, with the redelivered batch claimed a second after the failed one, and each send
// taking 0.8 s: the operation the failed batch never started comes long after the new claim,
// and its row (the failed claim's time) is stamped again before it is sent.
func TestExecutorSendsLateWhatAFailedBatchNeverStarted(t *testing.T) {
	sendsWhatAFailedBatchNeverStarted(t, true)
}

func sendsWhatAFailedBatchNeverStarted(t *testing.T, late bool) {
	e := exSetup(t)
	u, err := url.Parse(e.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	pool, err := pgxpool.New(e.ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	const login = 1004
	// A second attempt is looked up by its tag before its "sent" row is written (outside the
	// claim); the first attempt after it in the same batch was recorded by the claim.
	retried, fresh := e.op(login), e.op(login)
	retried.Attempt = 2
	cut := make(chan struct{})
	e.cfg.Pool = pool
	var port mt5.TradeServer = e.sim
	if late {
		port = slowSends{TradeServer: e.sim, clock: e.clock, took: 800 * time.Millisecond}
	}
	e.cfg.Port = &cutOnLookup{TradeServer: port, tag: retried.Tag, cut: func() {
		proxy.Cut()
		close(cut)
		if late {
			e.clock.Add(time.Second)
		}
		time.AfterFunc(500*time.Millisecond, proxy.Restore)
	}}
	e.appendCmds(marketCmd(retried, "EURUSD", "BUY", "0.10"), marketCmd(fresh, "EURUSD", "BUY", "0.10"))
	e.start()

	select {
	case <-cut:
	case <-time.After(30 * time.Second):
		t.Fatal("the retried attempt was never looked up")
	}
	for _, op := range []events.Operation{retried, fresh} {
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusFilled, 0, 10009)
		if got.SentAt == 0 || got.Reconciled {
			t.Errorf("outcome of %s: sentAt %d, reconciled %v; want sent, not reconciled", op.OperationID, got.SentAt, got.Reconciled)
		}
		if ds := e.dealsByTag(login, op.Tag); len(ds) != 1 {
			t.Errorf("%d deals under %s's tag, want 1", len(ds), op.OperationID)
		}
		for _, o := range outcomesOf(e.execs.Snapshot(), op) {
			if o.Status != string(trading.StatusFilled) {
				t.Errorf("%s had outcome %s %d (%q)", op.OperationID, o.Status, o.Code, o.Msg)
			}
		}
	}
}

// Shut down in the middle of a batch: the operation being sent is left for the next owner to
// reconcile (it may have reached the trade server), but the ones the batch never started lose
// the "sent" rows its claim wrote, so that the next owner sends them instead of taking them
// for a send an executor died in (IN_DOUBT, then "did not execute": an acknowledged order the
// service never tried).
func TestExecutorShutDownMidBatchLeavesNothingUnsentToReconcile(t *testing.T) {
	e := exSetup(t)
	const login = 1004
	// The trade server holds every send for a minute (the executor's shutdown cuts it short).
	latency := sim.Fault{Mode: sim.FaultLatency, Latency: time.Minute}
	e.fault(latency)
	var inFlight, waiting events.Operation
	port := e.cfg.Port
	// The two commands are appended together, but the executor's batch is whatever its
	// consumer has buffered when it looks (batch.NoWait): now and then the first comes alone.
	// Then the scenario did not happen: the second is sent without the latency and the
	// scenario is tried again with two new operations.
	for attempt := 1; ; attempt++ {
		inFlight, waiting = e.op(login), e.op(login)
		e.appendCmds(marketCmd(inFlight, "EURUSD", "BUY", "0.10"), marketCmd(waiting, "EURUSD", "BUY", "0.10"))
		sending := newSendStarted(port)
		e.cfg.Port = sending
		stop := e.start()
		deadline := time.Now().Add(30 * time.Second)
		alone := false
		for {
			a, _ := e.row(inFlight)
			b, _ := e.row(waiting)
			if a && b {
				// Both claimed; stopped once the first is in the trade server's latency (an
				// executor stopped before it sends rightly releases both rows).
				select {
				case <-sending.started:
				case <-time.After(30 * time.Second):
					t.Fatal("the batch's first operation was never sent")
				}
				break
			}
			if a {
				alone = true // a claim writes the rows of its batch in one statement
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the batch was never claimed")
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop()
		if !alone {
			break
		}
		if attempt == 5 {
			t.Fatal("in 5 attempts the executor never claimed the two commands in one batch")
		}
		t.Logf("attempt %d: the first command was claimed alone; again with two new operations", attempt)
		e.fault(sim.Fault{Mode: sim.FaultNone})
		stop = e.start()
		e.waitRow(waiting) // not to hold the next attempt behind the latency
		stop()
		e.fault(latency)
	}
	if ok, st := e.row(inFlight); !ok || st != "" {
		t.Fatalf("the interrupted send's row: exists %v, status %q; want kept without outcome", ok, st)
	}
	if ok, _ := e.row(waiting); ok {
		t.Fatal("the operation the batch never started kept its sent row")
	}

	e.fault(sim.Fault{Mode: sim.FaultNone})
	e.start()
	got := e.outcome(waiting)
	checkOutcome(t, got, waiting, trading.StatusFilled, 0, 10009)
	if got.Reconciled || got.SentAt == 0 {
		t.Errorf("outcome of the unstarted operation: reconciled %v, sentAt %d; want sent by the next owner", got.Reconciled, got.SentAt)
	}
	if ds := e.dealsByTag(login, waiting.Tag); len(ds) != 1 {
		t.Errorf("%d deals under the unstarted operation's tag, want 1", len(ds))
	}
	// The interrupted one never reached the trade server (the latency came first): the next
	// owner reconciles it, finds nothing, and does not send it.
	if got := e.outcome(inFlight); got.Status != string(trading.StatusInDoubt) {
		t.Errorf("outcome of the interrupted send: %s %d (%q), want IN_DOUBT until settled", got.Status, got.Code, got.Msg)
	}
	if ds := e.dealsByTag(login, inFlight.Tag); len(ds) != 0 {
		t.Errorf("%d deals under the interrupted send's tag: it was sent again", len(ds))
	}
}

// Stopped a moment after its claim, while the trade server holds the send for a little
// while: the send is finished (within the stop's grace for sends under way), not cut short
// and left to the next owner, who would find it not executed and reject an acknowledged
// order the service never tried (a kill -9 run saw that after a restart).
func TestExecutorFinishesASendUnderWayWhenItStops(t *testing.T) {
	e := exSetup(t)
	const login = 1003
	e.fault(sim.Fault{Mode: sim.FaultLatency, Latency: 500 * time.Millisecond})
	op := e.op(login)
	// Stopped once the send is under way: its claim committed is not enough, since an
	// executor stopping between its claim and the send rightly starts nothing (its row is
	// released for the next owner, and no outcome comes from this one).
	sending := newSendStarted(e.cfg.Port)
	e.cfg.Port = sending
	e.appendCmds(marketCmd(op, "EURUSD", "BUY", "0.10"))
	stop := e.start()
	select {
	case <-sending.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the command was never sent")
	}
	stop() // the send is in the trade server's latency
	got := e.outcome(op)
	checkOutcome(t, got, op, trading.StatusFilled, 0, 10009)
	if got.Reconciled {
		t.Error("the send under way was reconciled by the next owner, not finished by the executor that stopped")
	}
	if ds := e.dealsByTag(login, op.Tag); len(ds) != 1 {
		t.Errorf("%d deals under the operation's tag, want 1", len(ds))
	}
}

// recordOf reads the operation id that the idempotency record of (key 1, coid) names ("" when
// there is none).
func (e *exEnv) recordOf(coid string) string {
	e.t.Helper()
	var id string
	err := e.pool.QueryRow(e.ctx, `SELECT operation_id FROM cmd.idempotency WHERE api_key_id = 1 AND client_order_id = $1`,
		coid).Scan(&id)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		e.t.Fatal(err)
	}
	return id
}

// A single operation's command is appended beside its idempotency record's insert, which
// may not have committed yet (or may have failed, or a Postgres crash lost it) when the
// executor reads the command. The claim then stores the record from the command and sends the
// operation; and when the client order id is bound to another operation (a same-id retry's
// command, an orphan), only that one is sent, and this one is void.
func TestExecutorClaimChecksTheIdempotencyRecord(t *testing.T) {
	e := exSetup(t)
	lost := e.op(1003)
	first, retry := e.op(1003), e.op(1003)
	retry.ClientOrderID = first.ClientOrderID
	// The retry's record, as the gateway stored it once the first one's was lost.
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO cmd.idempotency (api_key_id, client_order_id, operation, login, operation_id,
			tag, attempt, request_hash, command, status) VALUES (1, $1, 'PLACE_ORDER', 1003, $2, $3, 1, '\x00', '[]', 'QUEUED')`,
		retry.ClientOrderID, retry.OperationID, retry.Tag); err != nil {
		t.Fatal(err)
	}
	e.appendCmds(marketCmd(lost, "EURUSD", "BUY", "0.10"), marketCmd(first, "EURUSD", "BUY", "0.10"))
	e.appendCmds(marketCmd(retry, "EURUSD", "BUY", "0.10"))
	e.start()

	checkOutcome(t, e.outcome(lost), lost, trading.StatusFilled, 0, int(trading.RetDone))
	if got := e.recordOf(lost.ClientOrderID); got != lost.OperationID {
		t.Errorf("the lost record names %q after the claim, want %q (stored again from the command)", got, lost.OperationID)
	}
	voided := e.outcome(first)
	checkOutcome(t, voided, first, trading.StatusRejected, int(events.CodeClientOrderIDReused), 0)
	if !voided.Void || voided.SentAt != 0 {
		t.Errorf("the command whose client order id names another operation: void %v, sent at %d; want void, never sent",
			voided.Void, voided.SentAt)
	}
	checkOutcome(t, e.outcome(retry), retry, trading.StatusFilled, 0, int(trading.RetDone))
	if got := e.outcome(retry); got.Void {
		t.Error("the retry bound to the client order id is void")
	}
	e.settle(1003)
	if ds := e.dealsByTag(1003, first.Tag); len(ds) != 0 {
		t.Errorf("the superseded operation traded: %d deals", len(ds))
	}
	if ds := e.dealsByTag(1003, retry.Tag); len(ds) != 1 {
		t.Errorf("the retry bound to the client order id: %d deals, want 1", len(ds))
	}
	if got := e.recordOf(first.ClientOrderID); got != retry.OperationID {
		t.Errorf("the record names %q, want the retry's %q", got, retry.OperationID)
	}
}

// A command whose idempotency record Postgres refuses (its gateway's insert met the same and
// answered -5009) is not sent and gets its outcome, and the partition goes on: the other
// commands of its batch, whose records were missing too, are claimed and sent.
func TestExecutorClaimGoesOnPastARecordPostgresRefuses(t *testing.T) {
	e := exSetup(t)
	bad, good := e.op(1004), e.op(1004)
	refused := marketCmd(bad, "EURUSD", "BUY", "0.10")
	refused.Comment = "nul\x00" // "\u0000", which a jsonb column refuses
	e.appendCmds(refused, marketCmd(good, "EURUSD", "BUY", "0.10"))
	e.start()
	got := e.outcome(bad)
	if got.Status != string(trading.StatusRejected) || got.SentAt != 0 || got.Void {
		t.Errorf("the command whose record is refused: %+v; want REJECTED, never sent", got)
	}
	checkOutcome(t, e.outcome(good), good, trading.StatusFilled, 0, int(trading.RetDone))
	e.settle(1004)
	if ds := e.dealsByTag(1004, bad.Tag); len(ds) != 0 {
		t.Errorf("the command whose record is refused traded: %d deals", len(ds))
	}
	if got := e.recordOf(good.ClientOrderID); got != good.OperationID {
		t.Errorf("the good command's record names %q, want %q", got, good.OperationID)
	}
}

// deadClaim records op as sent at sentAt with no outcome and nothing sent: the claim of an
// executor killed -9 before its send (or with the trade server's copy of the request).
func (e *exEnv) deadClaim(op events.Operation, sentAt time.Time) {
	e.t.Helper()
	if _, err := e.pool.Exec(e.ctx, `INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at)
		VALUES ($1, $2, $3, $4, 'PLACE_ORDER', $5)`, op.OperationID, op.Attempt, op.Login, op.Tag, sentAt); err != nil {
		e.t.Fatal(err)
	}
}

// An executor killed between its claim and its send leaves a "sent" row the trade server
// never saw. The next owner of the partition finds it once the dead executor's session has
// timed out, near the attempt's send deadline: past that deadline, with the tag found
// nowhere, the order never executed, and inside its dispatch window it is sent (once), as
// the acknowledgement promised, instead of IN_DOUBT and then REJECTED "did not execute".
func TestExecutorSendsAnAttemptWhoseExecutorDiedBeforeSendingIt(t *testing.T) {
	e := exSetup(t)
	const login = 1003
	op := e.op(login)
	firstSent := e.clock.Now().Add(-12 * time.Second) // the default deadline: 10 s + 1 s
	e.deadClaim(op, firstSent)
	e.appendCmds(marketCmd(op, "XAUUSD", "BUY", "0.02"))
	e.start()
	got := e.outcome(op)
	checkOutcome(t, got, op, trading.StatusFilled, 0, int(trading.RetDone))
	if got.Reconciled || got.SentAt != e.clock.Now().UnixMilli() {
		t.Errorf("outcome reconciled %v, sent at %d; want sent by the new executor at %d", got.Reconciled, got.SentAt,
			e.clock.Now().UnixMilli())
	}
	if ds := e.dealsByTag(login, op.Tag); len(ds) != 1 {
		t.Fatalf("%d deals under the tag, want 1", len(ds))
	}
	if st := e.waitRow(op); st != string(trading.StatusFilled) {
		t.Fatalf("cmd.executions holds %q", st)
	}
	var sentAt time.Time
	if err := e.pool.QueryRow(e.ctx, `SELECT sent_at FROM cmd.executions WHERE operation_id = $1`, op.OperationID).Scan(&sentAt); err != nil {
		t.Fatal(err)
	}
	if !sentAt.Equal(e.clock.Now()) {
		t.Errorf("the row says sent at %v, want taken over at %v", sentAt, e.clock.Now())
	}
	if outs := outcomesOf(e.execs.Snapshot(), op); len(outs) != 1 {
		t.Errorf("%d outcomes, want the one FILLED", len(outs))
	}
}

// Found long after its deadline (no executor took the partition over for half a minute), a
// dead executor's claim is not sent: the background settling may be deciding it "did not
// execute" already. It is IN_DOUBT, as before, and nothing reaches the trade server.
func TestExecutorDoesNotSendAnAbandonedClaim(t *testing.T) {
	e := exSetup(t)
	const login = 1003
	op := e.op(login)
	e.deadClaim(op, e.clock.Now().Add(-45*time.Second))
	e.appendCmds(marketCmd(op, "XAUUSD", "BUY", "0.02"))
	e.start()
	got := e.outcome(op)
	checkOutcome(t, got, op, trading.StatusInDoubt, int(events.CodeStatusUnknown), 0)
	if ds := e.dealsByTag(login, op.Tag); len(ds) != 0 {
		t.Fatalf("%d deals under the tag: an abandoned claim was sent", len(ds))
	}
}

// slowSends is a trade server whose every send takes took of the executor's clock.
type slowSends struct {
	mt5.TradeServer
	clock *testenv.Clock
	took  time.Duration
}

func (s slowSends) Send(ctx context.Context, req mt5.TradeRequest) (mt5.TradeResult, error) {
	s.clock.Add(s.took)
	return s.TradeServer.Send(ctx, req)
}

// One account's operations of a batch are sent one after the other, all claimed at once. One
// whose turn comes long after the claim (its account's earlier sends were slow) has its row
// stamped again before it is sent: the time a next owner counts the send deadline from, and the
// settling its "did not execute" from, is its send's, never the claim's (from which a send
// still to come would look long overdue, and be sent again).
func TestExecutorStampsASendThatComesLongAfterItsClaim(t *testing.T) {
	e := exSetup(t)
	const login = 1003
	const took = 800 * time.Millisecond // more than half the default send grace (1 s)
	e.cfg.Port = slowSends{TradeServer: e.sim, clock: e.clock, took: took}
	ops := []events.Operation{e.op(login), e.op(login), e.op(login)}
	// Appended before the executor starts, so that its first read holds them together.
	e.appendCmds(marketCmd(ops[0], "EURUSD", "BUY", "0.01"), marketCmd(ops[1], "EURUSD", "BUY", "0.01"),
		marketCmd(ops[2], "EURUSD", "BUY", "0.01"))
	claimed := e.clock.Now()
	e.start()
	for i, op := range ops {
		got := e.outcome(op)
		checkOutcome(t, got, op, trading.StatusFilled, 0, int(trading.RetDone))
		want := claimed.Add(time.Duration(i) * took) // the first is sent at once, at its claim's time
		if got.SentAt != want.UnixMilli() {
			t.Errorf("operation %d: outcome sent at %d, want %d", i, got.SentAt, want.UnixMilli())
		}
		e.waitRow(op)
		var sentAt time.Time
		if err := e.pool.QueryRow(e.ctx, `SELECT sent_at FROM cmd.executions WHERE operation_id = $1`, op.OperationID).Scan(&sentAt); err != nil {
			t.Fatal(err)
		}
		if !sentAt.Equal(want) {
			t.Errorf("operation %d: its row says sent at %v, want %v", i, sentAt, want)
		}
		if ds := e.dealsByTag(login, op.Tag); len(ds) != 1 {
			t.Errorf("operation %d: %d deals under its tag, want 1", i, len(ds))
		}
	}
}

// sendStarted is a trade server that closes started when its first Send begins.
type sendStarted struct {
	mt5.TradeServer
	once    sync.Once
	started chan struct{}
}

func newSendStarted(port mt5.TradeServer) *sendStarted {
	return &sendStarted{TradeServer: port, started: make(chan struct{})}
}

func (s *sendStarted) Send(ctx context.Context, req mt5.TradeRequest) (mt5.TradeResult, error) {
	s.once.Do(func() { close(s.started) })
	return s.TradeServer.Send(ctx, req)
}
