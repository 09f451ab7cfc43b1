package sim

import (
	"testing"
	"tradesvc/events/trading"
)

func TestSwapByPointsChargesNightlyAndTripleOnWednesday(t *testing.T) {
	h := newHarness(t) // Tuesday
	h.quote("EURUSD", "1.08500", "1.08510")
	r := h.mustCode(trading.RetDone, market(1001, "EURUSD", trading.OrderBuy, "1"))
	h.clock.Set(serverTime(2026, 11, 17, 23, 59))
	h.housekeep()
	eqDec(t, "no swap before rollover", h.positions(1001)[0].Swap, "0")
	seq := h.lastSeq()
	h.clock.Set(serverTime(2026, 11, 18, 0, 0)) // Tuesday's rollover: -6.5 points * 0.00001 * 100000
	h.housekeep()
	eqStrings(t, "facts", kinds(h.factsAfter(seq)), "position:UPDATE")
	eqDec(t, "swap after Tuesday", h.positions(1001)[0].Swap, "-6.50")
	h.clock.Set(serverTime(2026, 11, 19, 0, 0)) // Wednesday: triple
	h.housekeep()
	eqDec(t, "swap after Wednesday", h.positions(1001)[0].Swap, "-26.00")
	a := h.account(1001)
	eqDec(t, "profit includes swap", a.Profit, "-36.00") // -10.00 spread + -26.00 swap
	// Saturday and Sunday have no EURUSD session: no charge for them
	h.clock.Set(serverTime(2026, 11, 23, 12, 0))
	h.housekeep()
	eqDec(t, "swap on Monday", h.positions(1001)[0].Swap, "-39.00") // + Thursday + Friday
	h.mustCode(trading.RetDone, closeReq(1001, r.Position, ""))
	ds := h.deals(1001)
	eqDec(t, "swap booked on the out deal", ds[len(ds)-1].Swap, "-39.00")
	// 10000 - 7 (open) - 7 (close) - 10 (spread) - 39 (swap)
	eqDec(t, "balance", h.account(1001).Balance, "9937.00")
}

func TestSwapByInterestOnBTCUSD(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "1"))
	h.clock.Set(serverTime(2026, 11, 18, 0, 0))
	h.housekeep()
	// 60000 * 1 * 1 * -18% / 360
	eqDec(t, "swap", h.positions(1001)[0].Swap, "-30.00")
}

func TestSwapReopenByClosePriceClosesAndReopensUnderANewTicket(t *testing.T) {
	h := newHarness(t) // LTCUSD: mode 7, long -50 points, triple Wednesday
	h.quote("LTCUSD", "80.00", "80.10")
	r := h.mustCode(trading.RetDone, market(1001, "LTCUSD", trading.OrderBuy, "1"))
	seq := h.lastSeq()
	h.clock.Set(serverTime(2026, 11, 18, 0, 0))
	h.housekeep()
	fs := h.factsAfter(seq)
	eqStrings(t, "facts", kinds(fs), "order:DELETE:FILLED", "deal:OUT", "position:CLOSE", "account",
		"order:DELETE:FILLED", "deal:IN", "position:NEW")
	if fs[2].Position.Ticket != r.Position || fs[6].Position.Ticket == r.Position {
		t.Fatal("the reopened position must have a new ticket")
	}
	eqDec(t, "closed at the bid", fs[1].Deal.Price, "80.00")
	eqDec(t, "realised", fs[1].Deal.Profit, "-0.10")
	eqDec(t, "reopened 50 points worse", fs[5].Deal.Price, "80.50")
	if fs[1].Deal.Reason != trading.ReasonRollover || fs[5].Deal.Reason != trading.ReasonRollover {
		t.Fatal("rollover deals must carry the rollover reason")
	}
	ps := h.positions(1001)
	if len(ps) != 1 || ps[0].Ticket == r.Position {
		t.Fatalf("positions %+v", ps)
	}
	// Wednesday: triple, 150 points
	h.clock.Set(serverTime(2026, 11, 19, 0, 0))
	h.housekeep()
	eqDec(t, "reopen on the triple day", h.positions(1001)[0].PriceOpen, "81.50")
}

func TestSwapReopenByBidForASell(t *testing.T) {
	h := newHarness(t) // XRPUSD: mode 8, short -10 points
	h.quote("XRPUSD", "0.5000", "0.5020")
	h.mustCode(trading.RetDone, market(1001, "XRPUSD", trading.OrderSell, "1"))
	h.quote("XRPUSD", "0.5100", "0.5120")
	h.clock.Set(serverTime(2026, 11, 18, 0, 0))
	h.housekeep()
	ds := h.deals(1001)
	out, in := ds[len(ds)-2], ds[len(ds)-1]
	eqDec(t, "closed at the bid", out.Price, "0.5100")
	eqDec(t, "realised (0.5000-0.5100)*1*1000", out.Profit, "-10.00")
	eqDec(t, "reopened 10 points lower", in.Price, "0.5090")
}

func TestSwapModesInTheirUnits(t *testing.T) {
	cases := []struct {
		mode  trading.SwapMode
		rate  string
		login int64
		want  string
	}{
		{trading.SwapBySymbolCurrency, "-0.001", 1001, "-60.00"}, // 0.001 BTC at the 60000 bid
		{trading.SwapByMarginCurrency, "-2.5", 1001, "-2.50"},
		{trading.SwapByGroupCurrency, "-3", 1004, "-3.00"}, // already in the deposit currency (USC)
		{trading.SwapByProfitCurrency, "-4", 1004, "-400.00"},
		{trading.SwapByInterestOpen, "-18", 1001, "-30.00"}, // 60010*18%/360 = 30.005, half-even
		{trading.SwapByInterestCurrent, "-18", 1001, "-30.00"},
		{trading.SwapByPoints, "-150", 1001, "-1.50"}, // 150 points of 0.01 on 1 lot of contract 1
	}
	for _, c := range cases {
		t.Run(c.mode.String(), func(t *testing.T) {
			h := newHarness(t)
			y := h.s.symbols["BTCUSD"]
			y.spec.SwapMode, y.spec.SwapLong = c.mode, D(c.rate)
			h.quote("BTCUSD", "60000.00", "60010.00")
			h.mustCode(trading.RetDone, market(c.login, "BTCUSD", trading.OrderBuy, "1"))
			h.clock.Set(serverTime(2026, 11, 18, 0, 0))
			h.housekeep()
			eqDec(t, "swap", h.positions(c.login)[0].Swap, c.want)
		})
	}
}

func TestCreditCountsInEquityButNotBalance(t *testing.T) {
	h := newHarness(t)
	seq := h.lastSeq()
	if _, err := h.s.Credit(1002, D("500")); err != nil {
		t.Fatal(err)
	}
	fs := h.factsAfter(seq)
	if len(fs) != 2 || fs[0].Deal.Action != trading.DealCredit {
		t.Fatalf("facts %v", kinds(fs))
	}
	eqDec(t, "credit in the account fact", fs[1].Account.Credit, "500")
	a := h.account(1002)
	eqDec(t, "balance", a.Balance, "10000.00")
	eqDec(t, "equity", a.Equity, "10500.00")
	if _, err := h.s.Deposit(1002, D("-20000")); err == nil {
		t.Fatal("a withdrawal below zero was accepted")
	}
}
