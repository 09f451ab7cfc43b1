package sim

import (
	"testing"
	"time"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

func TestPendingPlacementEmitsRequestAddThenPlacedAnd10008(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	seq := h.lastSeq()
	r := h.mustCode(trading.RetPlaced, pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "59000.00"))
	eqDec(t, "price", r.Price, "59000.00")
	eqDec(t, "volume", r.Volume, "0.10")
	fs := h.factsAfter(seq)
	eqStrings(t, "facts", kinds(fs), "order:NEW:REQUEST_ADD", "order:UPDATE:PLACED")
	oo := h.openOrders(1001)
	if len(oo) != 1 || oo[0].Ticket != r.Order || oo[0].State != trading.StatePlaced || oo[0].Type != trading.OrderBuyLimit {
		t.Fatalf("open orders %+v", oo)
	}
}

func TestEachPendingTypeTriggersOnItsSideOfTheMarket(t *testing.T) {
	cases := []struct {
		typ            trading.OrderType
		price          string
		nearBid, nearA string // a quote that must not trigger
		hitBid, hitAsk string // a quote that triggers
		fill           string
		pos            trading.Side
	}{
		{trading.OrderBuyLimit, "59000.00", "59000.00", "59000.01", "58990.00", "59000.00", "59000.00", trading.Buy},
		{trading.OrderSellLimit, "61000.00", "60999.99", "61010.00", "61000.00", "61010.00", "61000.00", trading.Sell},
		{trading.OrderBuyStop, "61000.00", "60980.00", "60999.99", "60990.00", "61000.00", "61000.00", trading.Buy},
		{trading.OrderSellStop, "59000.00", "59000.01", "59010.00", "58999.00", "59009.00", "58999.00", trading.Sell},
	}
	for _, c := range cases {
		t.Run(c.typ.String(), func(t *testing.T) {
			h := newHarness(t)
			h.quote("BTCUSD", "60000.00", "60010.00")
			r := h.mustCode(trading.RetPlaced, pending(1001, "BTCUSD", c.typ, "0.10", c.price))
			h.quote("BTCUSD", c.nearBid, c.nearA)
			if len(h.openOrders(1001)) != 1 {
				t.Fatal("triggered too early")
			}
			seq := h.lastSeq()
			h.quote("BTCUSD", c.hitBid, c.hitAsk)
			fs := h.factsAfter(seq)
			eqStrings(t, "facts", kinds(fs), "order:DELETE:FILLED", "deal:IN", "position:NEW")
			if fs[0].Order.Ticket != r.Order || fs[1].Deal.Order != r.Order {
				t.Fatalf("trigger facts %+v %+v", fs[0].Order, fs[1].Deal)
			}
			eqDec(t, "fill", fs[1].Deal.Price, c.fill)
			ps := h.positions(1001)
			if len(ps) != 1 || ps[0].Type != c.pos || ps[0].Ticket != r.Order {
				t.Fatalf("positions %+v", ps)
			}
			if len(h.openOrders(1001)) != 0 {
				t.Fatal("order still open")
			}
		})
	}
}

func TestStopLimitBecomesLimitAtStopLimitPriceThenFills(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	req := pending(1001, "BTCUSD", trading.OrderBuyStopLimit, "0.10", "61000.00")
	req.StopLimit = D("60500.00")
	r := h.mustCode(trading.RetPlaced, req)
	seq := h.lastSeq()
	h.quote("BTCUSD", "61000.00", "61010.00") // stop touched; limit 60500 not reached
	fs := h.factsAfter(seq)
	eqStrings(t, "facts", kinds(fs), "order:UPDATE:PLACED")
	if o := fs[0].Order; o.Type != trading.OrderBuyLimit || o.Ticket != r.Order {
		t.Fatalf("converted order %+v", o)
	} else {
		eqDec(t, "limit price", o.Price, "60500.00")
	}
	h.quote("BTCUSD", "60480.00", "60490.00")
	ps := h.positions(1001)
	if len(ps) != 1 {
		t.Fatalf("positions %+v", ps)
	}
	eqDec(t, "open", ps[0].PriceOpen, "60490.00")
	// sell side: the stop below, the limit above it
	sreq := pending(1001, "BTCUSD", trading.OrderSellStopLimit, "0.10", "60000.00")
	sreq.StopLimit = D("59000.00")
	h.mustCode(trading.RetInvalidPrice, sreq) // a sell limit below its stop is refused
	sreq.StopLimit = D("60200.00")
	h.mustCode(trading.RetPlaced, sreq)
}

func TestPendingPriceSideAndStopsLevel(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00") // stops level 100 points = 1.00
	h.mustCode(trading.RetInvalidPrice, pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "60010.00"))
	h.mustCode(trading.RetInvalidStops, pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "60009.01"))
	h.mustCode(trading.RetPlaced, pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "60009.00"))
	h.mustCode(trading.RetInvalidPrice, pending(1001, "BTCUSD", trading.OrderSellStop, "0.10", "60001.00"))
	h.mustCode(trading.RetInvalidPrice, pending(1001, "BTCUSD", trading.OrderBuyStop, "0.10", "60010.005"))
	h.mustCode(trading.RetInvalidPrice, pending(1001, "US500", trading.OrderBuyLimit, "0.1", "5100.10")) // tick 0.25
	h.mustCode(trading.RetPlaced, pending(1001, "US500", trading.OrderBuyLimit, "0.1", "5100.25"))
	withSL := pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "59000.00")
	withSL.SL = D("58999.50") // closer than the stops level to the open price
	h.mustCode(trading.RetInvalidStops, withSL)
	withSL.SL, withSL.TP = D("58000.00"), D("58500.00") // TP below a buy's open price
	h.mustCode(trading.RetInvalidStops, withSL)
	withSL.TP = D("60000.00")
	h.mustCode(trading.RetPlaced, withSL)
}

func TestModifyAndRemovePending(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	r := h.mustCode(trading.RetPlaced, pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "59000.00"))
	mod := mt5.TradeRequest{Login: 1001, Action: mt5.ActionModify, Order: r.Order, Price: D("59000.00")}
	h.mustCode(trading.RetNoChanges, mod)
	mod.Price = D("59500.00")
	seq := h.lastSeq()
	h.mustCode(trading.RetDone, mod)
	eqStrings(t, "modify facts", kinds(h.factsAfter(seq)), "order:UPDATE:REQUEST_MODIFY", "order:UPDATE:PLACED")
	eqDec(t, "new price", h.openOrders(1001)[0].Price, "59500.00")
	// the old price no longer triggers; the new one does
	h.quote("BTCUSD", "59490.00", "59500.00")
	if len(h.positions(1001)) != 1 {
		t.Fatal("modified order did not trigger at its new price")
	}
	h.mustCode(trading.RetOrderChanged, mod) // it has left the book
	h.mustCode(trading.RetInvalid, mt5.TradeRequest{Login: 1002, Action: mt5.ActionRemove, Order: r.Order})

	h.quote("BTCUSD", "60000.00", "60010.00")
	r2 := h.mustCode(trading.RetPlaced, pending(1001, "BTCUSD", trading.OrderSellLimit, "0.10", "61000.00"))
	seq = h.lastSeq()
	h.mustCode(trading.RetDone, mt5.TradeRequest{Login: 1001, Action: mt5.ActionRemove, Order: r2.Order})
	eqStrings(t, "remove facts", kinds(h.factsAfter(seq)), "order:UPDATE:REQUEST_CANCEL", "order:DELETE:CANCELED")
	if len(h.openOrders(1001)) != 0 {
		t.Fatal("removed order still open")
	}
	h.quote("BTCUSD", "61000.00", "61010.00")
	if len(h.positions(1001)) != 1 {
		t.Fatal("a removed order triggered")
	}
}

func TestFreezeLevelRefusesChangesNearTheMarket(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00") // freeze level 50 points = 0.50
	r := h.mustCode(trading.RetPlaced, pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "59000.00"))
	h.quote("BTCUSD", "58990.00", "59000.40") // ask 0.40 above the order: inside the freeze band, not triggered
	h.mustCode(trading.RetFrozen, mt5.TradeRequest{Login: 1001, Action: mt5.ActionRemove, Order: r.Order})
	h.mustCode(trading.RetFrozen, mt5.TradeRequest{Login: 1001, Action: mt5.ActionModify, Order: r.Order, Price: D("58000.00")})
	h.quote("BTCUSD", "58990.00", "59000.50")
	h.mustCode(trading.RetDone, mt5.TradeRequest{Login: 1001, Action: mt5.ActionRemove, Order: r.Order})
}

func TestExpirationKinds(t *testing.T) {
	h := newHarness(t) // Tuesday 12:00 server time
	h.quote("BTCUSD", "60000.00", "60010.00")
	place := func(tt trading.TimeType, exp time.Time) int64 {
		req := pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.01", "50000.00")
		req.TypeTime = tt
		if !exp.IsZero() {
			req.Expiration = exp.UnixMilli()
		}
		return h.mustCode(trading.RetPlaced, req).Order
	}
	gtc := place(trading.TimeGTC, time.Time{})
	day := place(trading.TimeDay, time.Time{})
	gtd := place(trading.TimeSpecified, serverTime(2026, 11, 17, 15, 30))
	gtdDay := place(trading.TimeSpecifiedDay, serverTime(2026, 11, 18, 10, 0))
	state := func(tkt int64) trading.OrderState {
		for _, o := range h.openOrders(1001) {
			if o.Ticket == tkt {
				return o.State
			}
		}
		for _, o := range h.history(1001) {
			if o.Ticket == tkt {
				return o.State
			}
		}
		return -1
	}
	step := func(at time.Time, want map[int64]trading.OrderState) {
		t.Helper()
		h.clock.Set(at)
		h.housekeep()
		for tkt, w := range want {
			if got := state(tkt); got != w {
				t.Fatalf("at %v order %d state %v, want %v", at, tkt, got, w)
			}
		}
	}
	step(serverTime(2026, 11, 17, 15, 29), map[int64]trading.OrderState{gtd: trading.StatePlaced})
	seq := h.lastSeq()
	step(serverTime(2026, 11, 17, 15, 30), map[int64]trading.OrderState{gtd: trading.StateExpired, day: trading.StatePlaced})
	eqStrings(t, "expiry facts", kinds(h.factsAfter(seq))[:1], "order:DELETE:EXPIRED")
	step(serverTime(2026, 11, 18, 0, 0), map[int64]trading.OrderState{day: trading.StateExpired, gtdDay: trading.StatePlaced})
	step(serverTime(2026, 11, 18, 23, 59), map[int64]trading.OrderState{gtdDay: trading.StatePlaced})
	step(serverTime(2026, 11, 19, 0, 0), map[int64]trading.OrderState{gtdDay: trading.StateExpired, gtc: trading.StatePlaced})
	step(serverTime(2026, 12, 30, 0, 0), map[int64]trading.OrderState{gtc: trading.StatePlaced})
}

func TestInvalidExpirations10022(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	req := pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.01", "50000.00")
	req.TypeTime = trading.TimeSpecified
	h.mustCode(trading.RetInvalidExpiration, req) // no expiration
	req.Expiration = tuesdayNoon.Add(-time.Minute).UnixMilli()
	h.mustCode(trading.RetInvalidExpiration, req) // in the past
	uni := pending(1001, "UNIUSD", trading.OrderBuyLimit, "0.01", "5.000")
	uni.TypeTime, uni.Expiration = trading.TimeSpecified, tuesdayNoon.Add(time.Hour).UnixMilli()
	h.mustCode(trading.RetInvalidExpiration, uni) // UNIUSD lacks GTD
	uni.TypeTime = trading.TimeSpecifiedDay
	h.mustCode(trading.RetPlaced, uni)
}

func TestSLAndTPFireOnTheClosingSide(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	buy := market(1001, "BTCUSD", trading.OrderBuy, "0.10")
	buy.SL, buy.TP = D("59000.00"), D("61000.00")
	b := h.mustCode(trading.RetDone, buy)
	sell := market(1001, "BTCUSD", trading.OrderSell, "0.10")
	sell.SL, sell.TP = D("61000.00"), D("59500.00")
	h.mustCode(trading.RetDone, sell)
	// the ask reaches the buy's SL level but the bid does not: nothing fires for the buy;
	// the sell's TP (ask <= 59500) does not fire either
	h.quote("BTCUSD", "59001.00", "59501.00")
	if len(h.positions(1001)) != 2 {
		t.Fatal("fired early")
	}
	seq := h.lastSeq()
	h.quote("BTCUSD", "58990.00", "59000.00")
	fs := h.factsAfter(seq)
	var reasons []trading.DealReason
	for _, f := range fs {
		if f.Deal != nil {
			reasons = append(reasons, f.Deal.Reason)
			if f.Deal.Position == b.Position {
				eqDec(t, "SL fill at bid", f.Deal.Price, "58990.00")
				if f.Deal.Comment != "[sl 59000.00]" {
					t.Errorf("comment %q", f.Deal.Comment)
				}
			} else {
				eqDec(t, "TP fill at ask", f.Deal.Price, "59000.00")
			}
		}
	}
	if len(reasons) != 2 || reasons[0] != trading.ReasonSL || reasons[1] != trading.ReasonTP {
		t.Fatalf("reasons %v", reasons)
	}
	if len(h.positions(1001)) != 0 {
		t.Fatal("positions left")
	}
}

func TestModifyPositionStops(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	b := h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	m := mt5.TradeRequest{Login: 1001, Action: mt5.ActionSLTP, Position: b.Position, SL: D("59999.50")}
	h.mustCode(trading.RetInvalidStops, m) // within 1.00 of the bid
	m.SL = D("59500.00")
	seq := h.lastSeq()
	h.mustCode(trading.RetDone, m)
	eqStrings(t, "facts", kinds(h.factsAfter(seq)), "position:UPDATE")
	h.mustCode(trading.RetNoChanges, m)
	m.SL = D("0")
	h.mustCode(trading.RetDone, m) // removes the stop
	h.quote("BTCUSD", "59000.00", "59010.00")
	if len(h.positions(1001)) != 1 {
		t.Fatal("a removed SL fired")
	}
	h.mustCode(trading.RetDone, closeReq(1001, b.Position, ""))
	m.SL = D("58000.00")
	h.mustCode(trading.RetPositionClosed, m)
}

func TestTriggeredOrderTheAccountCannotCarryIsRejected(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	r := h.mustCode(trading.RetPlaced, pending(1002, "BTCUSD", trading.OrderBuyLimit, "1", "59000.00"))
	if _, err := h.s.Deposit(1002, D("-9800")); err != nil { // 200 left; 1 lot needs 590 margin
		t.Fatal(err)
	}
	seq := h.lastSeq()
	h.quote("BTCUSD", "58990.00", "59000.00")
	fs := h.factsAfter(seq)
	eqStrings(t, "facts", kinds(fs), "order:DELETE:REJECTED")
	if fs[0].Order.Ticket != r.Order || len(h.positions(1002)) != 0 {
		t.Fatal("the order was not rejected cleanly")
	}
}
