package sim

import (
	"testing"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

func TestMarketBuyFillsAtAskAndOpensHedgingPositions(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	seq := h.lastSeq()
	r := h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	eqDec(t, "price", r.Price, "60010.00")
	eqDec(t, "volume", r.Volume, "0.10")
	if r.Order == 0 || r.Deal == 0 || r.Position != r.Order {
		t.Fatalf("tickets %+v", r)
	}
	eqStrings(t, "facts", kinds(h.factsAfter(seq)), "order:DELETE:FILLED", "deal:IN", "position:NEW")
	// a second buy is a second position (hedging), a sell a third one
	r2 := h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	r3 := h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderSell, "0.10"))
	eqDec(t, "sell price", r3.Price, "60000.00")
	if !(r.Position < r2.Position && r2.Position < r3.Position) {
		t.Fatalf("positions not distinct and increasing: %d %d %d", r.Position, r2.Position, r3.Position)
	}
	ps := h.positions(1001)
	if len(ps) != 3 || ps[2].Type != trading.Sell {
		t.Fatalf("positions %+v", ps)
	}
	eqDec(t, "floating profit of the buy", ps[0].Profit, "-1.00")
	a := h.account(1001)
	// margin: 0.1 lot * 1 * open / 100 per position
	eqDec(t, "margin", a.Margin, "180.02")
	eqDec(t, "profit", a.Profit, "-3.00")
	eqDec(t, "equity", a.Equity, "9997.00")
	eqDec(t, "free margin", a.MarginFree, "9816.98")
	eqDec(t, "margin level", a.MarginLevel, "5553.27")
}

func TestCloseBooksProfitOnOutDealAndClosedPositionAnswers10036(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	r := h.mustCode(trading.RetDone, market(1002, "BTCUSD", trading.OrderSell, "0.20"))
	h.quote("BTCUSD", "59000.00", "59010.00")
	seq := h.lastSeq()
	c := h.mustCode(trading.RetDone, closeReq(1002, r.Position, ""))
	eqDec(t, "close price", c.Price, "59010.00")
	if c.Position != r.Position || c.Order == r.Order {
		t.Fatalf("close result %+v", c)
	}
	eqStrings(t, "facts", kinds(h.factsAfter(seq)), "order:DELETE:FILLED", "deal:OUT", "position:CLOSE", "account")
	ds := h.deals(1002)
	out := ds[len(ds)-1]
	if out.Entry != trading.EntryOut || out.Action != trading.DealBuy || out.Position != r.Position {
		t.Fatalf("out deal %+v", out)
	}
	eqDec(t, "profit", out.Profit, "198.00")
	eqDec(t, "balance", h.account(1002).Balance, "10198.00")
	h.mustCode(trading.RetPositionClosed, closeReq(1002, r.Position, ""))
	h.mustCode(trading.RetInvalid, closeReq(1002, 999999, ""))
}

func TestPartialCloseKeepsTicketChargesCommissionAndRefusesMoreThanPosition(t *testing.T) {
	h := newHarness(t)
	h.quote("ETHUSD", "3000.00", "3002.00")
	r := h.mustCode(trading.RetDone, market(1001, "ETHUSD", trading.OrderBuy, "0.30"))
	eqDec(t, "balance after open commission", h.account(1001).Balance, "9999.40")
	h.mustCode(trading.RetInvalidCloseVolume, closeReq(1001, r.Position, "0.31"))
	h.mustCode(trading.RetInvalidVolume, closeReq(1001, r.Position, "0.005"))
	h.quote("ETHUSD", "3010.00", "3012.00")
	c := h.mustCode(trading.RetDone, closeReq(1001, r.Position, "0.10"))
	eqDec(t, "closed volume", c.Volume, "0.10")
	ps := h.positions(1001)
	if len(ps) != 1 || ps[0].Ticket != r.Position {
		t.Fatalf("positions %+v", ps)
	}
	eqDec(t, "remaining", ps[0].Volume, "0.20")
	ds := h.deals(1001)
	out := ds[len(ds)-1]
	eqDec(t, "profit", out.Profit, "0.80")
	eqDec(t, "commission", out.Commission, "-0.20")
	eqDec(t, "balance", h.account(1001).Balance, "10000.00")
}

func TestCentAccountConvertsMarginProfitAndCommissionToUSC(t *testing.T) {
	h := newHarness(t)
	h.quote("EURUSD", "1.08500", "1.08510")
	h.mustCode(trading.RetDone, market(1004, "EURUSD", trading.OrderBuy, "1"))
	a := h.account(1004)
	if a.Currency != "USC" {
		t.Fatalf("currency %s", a.Currency)
	}
	eqDec(t, "balance after commission", a.Balance, "999300.00")
	eqDec(t, "margin (1000 EUR at 1.085 = 1085 USD)", a.Margin, "108500.00")
	eqDec(t, "profit (-10 USD)", a.Profit, "-1000.00")
	eqDec(t, "equity", a.Equity, "998300.00")
}

func TestProfitInJPYConvertsAtCurrentRate(t *testing.T) {
	h := newHarness(t)
	h.quote("USDJPY", "150.250", "150.262")
	r := h.mustCode(trading.RetDone, market(1001, "USDJPY", trading.OrderBuy, "1"))
	h.quote("USDJPY", "151.250", "151.262")
	h.mustCode(trading.RetDone, closeReq(1001, r.Position, ""))
	ds := h.deals(1001)
	// 98800 JPY / 151.262
	eqDec(t, "profit", ds[len(ds)-1].Profit, "653.17")
}

func TestSlippageFillsWorseThanQuote(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	if err := h.s.SetSlippage("BTCUSD", 3); err != nil {
		t.Fatal(err)
	}
	r := h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.01"))
	eqDec(t, "buy", r.Price, "60010.03")
	r = h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderSell, "0.01"))
	eqDec(t, "sell", r.Price, "59999.97")
}

func TestIOCWithLimitedLiquidityFillsPartiallyInSeveralDeals(t *testing.T) {
	h := newHarness(t)
	h.quote("BNBUSD", "550.00", "550.50")
	seq := h.lastSeq()
	r := h.mustCode(trading.RetDonePartial, market(1001, "BNBUSD", trading.OrderBuy, "5"))
	eqDec(t, "executed", r.Volume, "3")
	eqDec(t, "vwap", r.Price, "550.5100")
	if len(r.Deals) != 3 {
		t.Fatalf("deals %v", r.Deals)
	}
	eqStrings(t, "facts", kinds(h.factsAfter(seq)), "order:DELETE:PARTIAL", "deal:IN", "deal:IN", "deal:IN", "position:NEW")
	ds := h.deals(1001)
	for i, want := range []string{"550.50", "550.51", "550.52"} {
		eqDec(t, "deal price", ds[i].Price, want)
		eqDec(t, "deal volume", ds[i].Volume, "1")
	}
	o := h.history(1001)[0]
	eqDec(t, "order remaining", o.VolumeCurrent, "2")
}

func TestFOKWithoutEnoughLiquidityIsRejectedAndUnsupportedFillIs10030(t *testing.T) {
	h := newHarness(t)
	if err := h.s.SetLiquidity("ETHUSD", D("1"), 2); err != nil {
		t.Fatal(err)
	}
	h.mustCode(trading.RetReject, market(1001, "ETHUSD", trading.OrderBuy, "3"))
	r := h.mustCode(trading.RetDone, market(1001, "ETHUSD", trading.OrderBuy, "2"))
	if len(r.Deals) != 2 {
		t.Fatalf("FOK filled in %d deals", len(r.Deals))
	}
	ioc := trading.FillIOC
	req := market(1001, "ETHUSD", trading.OrderBuy, "1")
	req.Filling = &ioc
	h.mustCode(trading.RetInvalidFill, req)
}

func TestRequestExecutionRequotesWhenPriceMovedBeyondDeviation(t *testing.T) {
	h := newHarness(t)
	h.quote("BCHUSD", "400.00", "400.40")
	req := market(1001, "BCHUSD", trading.OrderBuy, "0.10")
	req.Price, req.Deviation = D("400.00"), 10
	r := h.mustCode(trading.RetRequote, req)
	eqDec(t, "requote bid", r.Bid, "400.00")
	eqDec(t, "requote ask", r.Ask, "400.40")
	req.Deviation = 40
	r = h.mustCode(trading.RetDone, req)
	eqDec(t, "filled at the current ask", r.Price, "400.40")
	if n := len(h.positions(1001)); n != 1 {
		t.Fatalf("the requote executed something: %d positions", n)
	}
}

func TestMarginRefusal10019AndStopOutClosesTheLosingPosition(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60015.00")
	if _, err := h.s.Deposit(1002, D("-9300")); err != nil {
		t.Fatal(err)
	}
	h.mustCode(trading.RetNoMoney, market(1002, "BTCUSD", trading.OrderBuy, "1.20"))
	r := h.mustCode(trading.RetDone, market(1002, "BTCUSD", trading.OrderBuy, "1"))
	eqDec(t, "margin", h.account(1002).Margin, "600.15")
	// equity 300.08 at bid 59615.08: level 50.0008% > 50: nothing happens
	h.quote("BTCUSD", "59615.08", "59630.00")
	if len(h.positions(1002)) != 1 {
		t.Fatal("stopped out above the stop-out level")
	}
	seq := h.lastSeq()
	h.quote("BTCUSD", "59600.00", "59615.00")
	if len(h.positions(1002)) != 0 {
		t.Fatal("not stopped out")
	}
	fs := h.factsAfter(seq)
	eqStrings(t, "facts", kinds(fs), "order:DELETE:FILLED", "deal:OUT", "position:CLOSE", "account")
	if d := fs[1].Deal; d.Reason != trading.ReasonSO || d.Position != r.Position || d.Comment == "" {
		t.Fatalf("stop-out deal %+v", d)
	}
	eqDec(t, "balance", h.account(1002).Balance, "285.00")
}

func TestRefusalsBySymbolAccountAndGroupRules(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		name string
		want trading.Retcode
		req  mt5.TradeRequest
	}{
		{"trade mode DISABLED", trading.RetTradeDisabled, market(1001, "SOLUSD", trading.OrderBuy, "0.01")},
		{"LONG_ONLY refuses a sell", trading.RetLongOnly, market(1001, "ADAUSD", trading.OrderSell, "0.01")},
		{"SHORT_ONLY refuses a buy", trading.RetShortOnly, market(1001, "DOGEUSD", trading.OrderBuy, "0.01")},
		{"CLOSE_ONLY refuses an open", trading.RetCloseOnly, market(1001, "DOTUSD", trading.OrderBuy, "0.01")},
		{"no session on any day", trading.RetMarketClosed, market(1001, "USDRUB", trading.OrderBuy, "0.01")},
		{"account trading disabled", trading.RetClientDisablesAT, market(1005, "BTCUSD", trading.OrderBuy, "0.01")},
		{"volume below step", trading.RetInvalidVolume, market(1001, "BTCUSD", trading.OrderBuy, "0.015")},
		{"volume above max", trading.RetInvalidVolume, market(1001, "BTCUSD", trading.OrderBuy, "11")},
		{"unknown login", trading.RetInvalid, market(9999, "BTCUSD", trading.OrderBuy, "0.01")},
		{"unknown symbol", trading.RetInvalid, market(1001, "btcusd", trading.OrderBuy, "0.01")},
		{"pending type as a deal", trading.RetInvalidOrder, market(1001, "BTCUSD", trading.OrderBuyLimit, "0.01")},
		{"market type as pending", trading.RetInvalidOrder, pending(1001, "BTCUSD", trading.OrderBuy, "0.01", "50000.00")},
		{"volume limit", trading.RetLimitVolume, market(1001, "BNBUSD", trading.OrderSell, "11")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h.t = t
			h.mustCode(c.want, c.req)
		})
	}
	h.t = t
	sl := market(1001, "AVAXUSD", trading.OrderBuy, "0.01")
	sl.SL = D("30.00")
	h.mustCode(trading.RetInvalidStops, sl)
	sl.SL = D("0")
	h.mustCode(trading.RetDone, sl)
	if n := len(h.positions(1001)); n != 1 {
		t.Fatalf("refusals executed something: %d positions", n)
	}
}

func TestMarketClosedOutsideSessions(t *testing.T) {
	h := newHarness(t)
	h.clock.Set(serverTime(2026, 11, 21, 12, 0)) // Saturday
	h.mustCode(trading.RetMarketClosed, market(1001, "EURUSD", trading.OrderBuy, "0.01"))
	h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.01"))
	h.clock.Set(serverTime(2026, 11, 20, 23, 56)) // Friday after the 23:55 close
	h.mustCode(trading.RetMarketClosed, market(1001, "EURUSD", trading.OrderBuy, "0.01"))
	h.clock.Set(serverTime(2026, 11, 20, 23, 54))
	h.mustCode(trading.RetDone, market(1001, "EURUSD", trading.OrderBuy, "0.01"))
	h.clock.Set(serverTime(2026, 11, 17, 23, 20)) // Tuesday, in the index's 23:15-23:30 break
	h.mustCode(trading.RetMarketClosed, market(1001, "US500", trading.OrderBuy, "0.1"))
}

func TestGroupRulesHedgeProhibitedFIFOAndPositionLimit(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	a := h.mustCode(trading.RetDone, market(1006, "BTCUSD", trading.OrderBuy, "0.01"))
	h.mustCode(trading.RetHedgeProhibited, market(1006, "BTCUSD", trading.OrderSell, "0.01"))
	b := h.mustCode(trading.RetDone, market(1006, "BTCUSD", trading.OrderBuy, "0.01"))
	h.mustCode(trading.RetLimitPositions, market(1006, "ETHUSD", trading.OrderBuy, "0.01"))
	h.mustCode(trading.RetFIFOClose, closeReq(1006, b.Position, ""))
	h.mustCode(trading.RetDone, closeReq(1006, a.Position, ""))
	h.mustCode(trading.RetDone, closeReq(1006, b.Position, ""))
	h.mustCode(trading.RetPlaced, pending(1006, "BTCUSD", trading.OrderBuyLimit, "0.01", "50000.00"))
	h.mustCode(trading.RetPlaced, pending(1006, "BTCUSD", trading.OrderBuyLimit, "0.01", "50000.00"))
	h.mustCode(trading.RetLimitOrders, pending(1006, "BTCUSD", trading.OrderBuyLimit, "0.01", "50000.00"))
}

func TestStopOutThroughAGapIsCompensatedToAZeroBalance(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60015.00")
	if _, err := h.s.Deposit(1002, D("-9300")); err != nil {
		t.Fatal(err)
	}
	h.mustCode(trading.RetDone, market(1002, "BTCUSD", trading.OrderBuy, "1"))
	seq := h.lastSeq()
	h.quote("BTCUSD", "59000.00", "59015.00") // loss 1015 on a 700 balance
	fs := h.factsAfter(seq)
	eqStrings(t, "facts", kinds(fs), "order:DELETE:FILLED", "deal:OUT", "position:CLOSE", "account", "deal:IN", "account")
	if d := fs[4].Deal; d.Action != trading.DealSOCompensation {
		t.Fatalf("compensation deal %+v", d)
	} else {
		eqDec(t, "compensation", d.Profit, "315.00")
	}
	eqDec(t, "balance", h.account(1002).Balance, "0")
}
