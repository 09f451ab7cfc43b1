package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

func (h *harness) fault(f Fault) {
	h.t.Helper()
	if err := h.s.SetFault(f); err != nil {
		h.t.Fatal(err)
	}
}

func TestFaultNoAnswerExecutesButAnswersNothing(t *testing.T) {
	h := newHarness(t)
	h.fault(Fault{Mode: FaultNoAnswer})
	req := market(1001, "BTCUSD", trading.OrderBuy, "0.10")
	req.Comment = "client ABC1234"
	_, err := h.s.Send(h.ctx, req)
	if !errors.Is(err, mt5.ErrNoAnswer) {
		t.Fatalf("err %v", err)
	}
	ds, err := h.s.DealsByTag(h.ctx, 1001, "ABC1234")
	if err != nil || len(ds) != 1 {
		t.Fatalf("deals by tag %v %v", ds, err)
	}
	os, _ := h.s.OrdersByTag(h.ctx, 1001, "ABC1234")
	if len(os) != 1 || os[0].State != trading.StateFilled {
		t.Fatalf("orders by tag %+v", os)
	}
}

func TestFaultTimeoutExecutesNothing(t *testing.T) {
	h := newHarness(t)
	h.fault(Fault{Mode: FaultTimeout})
	req := market(1001, "BTCUSD", trading.OrderBuy, "0.10")
	req.Comment = "client ABC1235"
	if _, err := h.s.Send(h.ctx, req); !errors.Is(err, mt5.ErrTimeout) {
		t.Fatalf("err %v", err)
	}
	if ds, _ := h.s.DealsByTag(h.ctx, 1001, "ABC1235"); len(ds) != 0 {
		t.Fatal("executed under timeout")
	}
}

func TestFaultDisconnectFailsFeedsAndAnswers10031(t *testing.T) {
	h := newHarness(t)
	h.fault(Fault{Mode: FaultDisconnect})
	h.mustCode(trading.RetConnection, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	if _, err := h.s.Facts(h.ctx, 0, 10); !errors.Is(err, mt5.ErrDisconnected) {
		t.Fatalf("facts err %v", err)
	}
	if _, err := h.s.Ticks(h.ctx, 0, 10); !errors.Is(err, mt5.ErrDisconnected) {
		t.Fatalf("ticks err %v", err)
	}
	if _, err := h.s.Account(h.ctx, 1001); !errors.Is(err, mt5.ErrDisconnected) {
		t.Fatalf("read err %v", err)
	}
	h.fault(Fault{Mode: FaultNone})
	if len(h.positions(1001)) != 0 {
		t.Fatal("executed while disconnected")
	}
	if _, err := h.s.Deposit(1001, D("1")); err != nil {
		t.Fatal(err)
	}
	if fs, err := h.s.Facts(h.ctx, 0, 10); err != nil || len(fs) != 2 {
		t.Fatalf("facts after reconnect: %d %v", len(fs), err)
	}
}

func TestFaultRequoteAndRefuseAnswerWithoutExecuting(t *testing.T) {
	h := newHarness(t)
	h.fault(Fault{Mode: FaultRequote})
	h.mustCode(trading.RetRequote, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	h.fault(Fault{Mode: FaultRefuse, Retcode: trading.RetLocked})
	h.mustCode(trading.RetLocked, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	if len(h.positions(1001)) != 0 {
		t.Fatal("executed")
	}
	if err := h.s.SetFault(Fault{Mode: FaultRefuse, Retcode: trading.RetDone}); err == nil {
		t.Fatal("refuse with a success code accepted")
	}
}

func TestFaultLatencyDelaysAndHonoursTheCallersDeadline(t *testing.T) {
	h := newHarness(t)
	h.fault(Fault{Mode: FaultLatency, Latency: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(h.ctx, 5*time.Millisecond)
	defer cancel()
	if _, err := h.s.Send(ctx, market(1001, "BTCUSD", trading.OrderBuy, "0.10")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v", err)
	}
	if len(h.positions(1001)) != 0 {
		t.Fatal("executed after the caller gave up during the latency")
	}
	h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
}

func TestFaultShortfallsReproducesTheStagingServer(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	h.fault(Fault{Mode: FaultShortfalls})
	// no in-band answer, yet the market order executes
	if _, err := h.s.Send(h.ctx, market(1001, "BTCUSD", trading.OrderBuy, "0.10")); !errors.Is(err, mt5.ErrNoAnswer) {
		t.Fatalf("err %v", err)
	}
	if len(h.positions(1001)) != 1 {
		t.Fatal("market order did not execute")
	}
	// a pending placement executes too, but its cancel is never applied
	if _, err := h.s.Send(h.ctx, pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "50000.00")); !errors.Is(err, mt5.ErrNoAnswer) {
		t.Fatalf("err %v", err)
	}
	oo := h.openOrders(1001)
	if len(oo) != 1 {
		t.Fatalf("open orders %+v", oo)
	}
	seq := h.lastSeq()
	if _, err := h.s.Send(h.ctx, mt5.TradeRequest{Login: 1001, Action: mt5.ActionRemove, Order: oo[0].Ticket}); !errors.Is(err, mt5.ErrNoAnswer) {
		t.Fatalf("err %v", err)
	}
	if len(h.openOrders(1001)) != 1 || h.lastSeq() != seq {
		t.Fatal("the cancel was applied")
	}
	// a refused request is silent as well
	if _, err := h.s.Send(h.ctx, market(1001, "SOLUSD", trading.OrderBuy, "0.10")); !errors.Is(err, mt5.ErrNoAnswer) {
		t.Fatalf("err %v", err)
	}
	if ds := h.deals(1001); len(ds) != 0 {
		t.Fatalf("deal history should read empty, got %d", len(ds))
	}
	h.fault(Fault{Mode: FaultNone})
	if ds := h.deals(1001); len(ds) != 1 {
		t.Fatalf("deal history after clearing: %d", len(ds))
	}
}

// TestEverySpecMappedReturnCodeIsReachable drives each code the spec maps either through a
// natural input (covered by the scenario tests named in the table) or the refuse fault.
func TestEverySpecMappedReturnCodeIsReachable(t *testing.T) {
	h := newHarness(t)
	natural := map[trading.Retcode]string{
		10004: "TestRequestExecutionRequotesWhenPriceMovedBeyondDeviation", 10006: "TestFOKWithoutEnoughLiquidity...",
		10008: "TestPendingPlacement...", 10009: "TestMarketBuy...", 10010: "TestIOCWithLimitedLiquidity...",
		10013: "TestRefusals... unknown login", 10014: "TestRefusals... volume", 10015: "TestPendingPriceSideAndStopsLevel",
		10016: "TestPendingPriceSideAndStopsLevel", 10017: "TestRefusals... DISABLED", 10018: "TestMarketClosedOutsideSessions",
		10019: "TestMarginRefusal10019...", 10022: "TestInvalidExpirations10022", 10023: "TestModifyAndRemovePending",
		10025: "TestModifyAndRemovePending", 10027: "TestRefusals... account", 10029: "TestFreezeLevel...",
		10030: "TestFOKWithoutEnoughLiquidity...", 10031: "TestFaultDisconnect...", 10033: "TestGroupRules...",
		10034: "TestRefusals... volume limit", 10035: "TestRefusals... pending type", 10036: "TestClose...",
		10038: "TestPartialClose...", 10040: "TestGroupRules...", 10042: "TestRefusals... LONG_ONLY",
		10043: "TestRefusals... SHORT_ONLY", 10044: "TestRefusals... CLOSE_ONLY", 10045: "TestGroupRules...",
		10046: "TestGroupRules...",
	}
	for _, c := range trading.AllRetcodes() {
		if _, ok := natural[c]; ok || c.Success() {
			continue
		}
		h.fault(Fault{Mode: FaultRefuse, Retcode: c})
		h.mustCode(c, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	}
}
