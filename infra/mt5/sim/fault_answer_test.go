package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// The staging server cannot look orders up by tag: under the shortfalls fault OrdersByTag is
// empty for an order that exists (open or finished), while DealsByTag still finds the deals.
func TestFaultShortfallsOrdersByTagIsEmptyButDealsByTagWorks(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	mkt := market(1001, "BTCUSD", trading.OrderBuy, "0.10")
	mkt.Comment = "client #mkt001"
	pend := pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "50000.00")
	pend.Comment = "client #pnd001"
	h.fault(Fault{Mode: FaultShortfalls})
	for _, r := range []mt5.TradeRequest{mkt, pend} {
		if _, err := h.s.Send(h.ctx, r); !errors.Is(err, mt5.ErrNoAnswer) {
			t.Fatalf("send %s: err %v", r.Comment, err)
		}
	}
	for _, tag := range []string{"#mkt001", "#pnd001"} {
		os, err := h.s.OrdersByTag(h.ctx, 1001, tag)
		if err != nil || len(os) != 0 {
			t.Fatalf("orders by tag %s under shortfalls: %+v, %v; want none", tag, os, err)
		}
	}
	ds, err := h.s.DealsByTag(h.ctx, 1001, "#mkt001")
	if err != nil || len(ds) != 1 {
		t.Fatalf("deals by tag under shortfalls: %+v, %v; want the market deal", ds, err)
	}
	// The orders were there all along: clearing the fault finds them.
	h.fault(Fault{Mode: FaultNone})
	for _, tag := range []string{"#mkt001", "#pnd001"} {
		if os, err := h.s.OrdersByTag(h.ctx, 1001, tag); err != nil || len(os) != 1 {
			t.Fatalf("orders by tag %s after clearing: %+v, %v", tag, os, err)
		}
	}
}

// AnswerDelay holds the answer after the request executed: a caller that gives up during it
// gets its context's error, and the execution stands (position, deal by tag).
func TestFaultAnswerDelayExecutesThenHoldsTheAnswerUntilTheCallerGivesUp(t *testing.T) {
	h := newHarness(t)
	h.fault(Fault{Mode: FaultNone, AnswerDelay: time.Hour})
	req := market(1001, "BTCUSD", trading.OrderBuy, "0.10")
	req.Comment = "client #dly001"
	ctx, cancel := context.WithCancel(h.ctx)
	errc := make(chan error, 1)
	go func() {
		_, err := h.s.Send(ctx, req)
		errc <- err
	}()
	// Wait for the execution itself (not for time): the deal appears while Send still waits.
	for {
		ds, err := h.s.DealsByTag(h.ctx, 1001, "#dly001")
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) == 1 {
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("Send answered (%v) before its request executed", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case err := <-errc:
		t.Fatalf("Send answered during the answer delay: %v", err)
	default:
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Send after the caller gave up: %v, want context.Canceled", err)
	}
	if ps := h.positions(1001); len(ps) != 1 {
		t.Fatalf("positions %+v, want the one the delayed request opened", ps)
	}
	if f := h.s.CurrentFault(); f.AnswerDelay != time.Hour {
		t.Fatalf("current fault %+v", f)
	}
	if err := h.s.SetFault(Fault{Mode: FaultNone, AnswerDelay: -time.Second}); err == nil {
		t.Fatal("a negative answer delay was accepted")
	}
}

// A short AnswerDelay only delays: the answer is the normal one, and it composes with the
// other modes (no-answer still answers ErrNoAnswer, after the delay).
func TestFaultAnswerDelayThenAnswersAsTheModeSays(t *testing.T) {
	h := newHarness(t)
	h.fault(Fault{Mode: FaultNone, AnswerDelay: 20 * time.Millisecond})
	res := h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	if res.Deal == 0 || res.Position == 0 {
		t.Fatalf("delayed answer %+v lacks the deal and position", res)
	}
	h.fault(Fault{Mode: FaultNoAnswer, AnswerDelay: 20 * time.Millisecond})
	if _, err := h.s.Send(h.ctx, market(1001, "BTCUSD", trading.OrderBuy, "0.10")); !errors.Is(err, mt5.ErrNoAnswer) {
		t.Fatalf("no-answer with a delay: %v", err)
	}
	if ps := h.positions(1001); len(ps) != 2 {
		t.Fatalf("%d positions, want 2", len(ps))
	}
}
