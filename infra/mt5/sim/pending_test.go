package sim

import (
	"testing"
	"time"

	"tradesvc/infra/mt5"
)

func TestPendingPlacementEmitsRequestAddThenPlacedAnd10008(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	seq := h.lastSeq()
	r := h.mustCode(mt5.RetPlaced, pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.10", "59000.00"))
	eqDec(t, "price", r.Price, "59000.00")
	eqDec(t, "volume", r.Volume, "0.10")
	fs := h.factsAfter(seq)
	eqStrings(t, "facts", kinds(fs), "order:NEW:REQUEST_ADD", "order:UPDATE:PLACED")
	oo := h.openOrders(1001)
	if len(oo) != 1 || oo[0].Ticket != r.Order || oo[0].State != mt5.StatePlaced || oo[0].Type != mt5.OrderBuyLimit {
		t.Fatalf("open orders %+v", oo)
	}
}

func TestEachPendingTypeTriggersOnItsSideOfTheMarket(t *testing.T) {
	cases := []struct {
		typ            mt5.OrderType
		price          string
		nearBid, nearA string // a quote that must not trigger
		hitBid, hitAsk string // a quote that triggers
		fill           string
		pos            mt5.PositionType
	}{
		{mt5.OrderBuyLimit, "59000.00", "59000.00", "59000.01", "58990.00", "59000.00", "59000.00", mt5.PositionBuy},
		{mt5.OrderSellLimit, "61000.00", "60999.99", "61010.00", "61000.00", "61010.00", "61000.00", mt5.PositionSell},
		{mt5.OrderBuyStop, "61000.00", "60980.00", "60999.99", "60990.00", "61000.00", "61000.00", mt5.PositionBuy},
		{mt5.OrderSellStop, "59000.00", "59000.01", "59010.00", "58999.00", "59009.00", "58999.00", mt5.PositionSell},
	}
	for _, c := range cases {
		t.Run(c.typ.String(), func(t *testing.T) {
			h := newHarness(t)
			h.quote("BTCUSD", "60000.00", "60010.00")
			r := h.mustCode(mt5.RetPlaced, pending(1001, "BTCUSD", c.typ, "0.10", c.price))
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
	req := pending(1001, "BTCUSD", mt5.OrderBuyStopLimit, "0.10", "61000.00")
	req.StopLimit = D("60500.00")
	r := h.mustCode(mt5.RetPlaced, req)
	seq := h.lastSeq()
	h.quote("BTCUSD", "61000.00", "61010.00") // stop touched; limit 60500 not reached
	fs := h.factsAfter(seq)
	eqStrings(t, "facts", kinds(fs), "order:UPDATE:PLACED")
	if o := fs[0].Order; o.Type != mt5.OrderBuyLimit || o.Ticket != r.Order {
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
	sreq := pending(1001, "BTCUSD", mt5.OrderSellStopLimit, "0.10", "60000.00")
	sreq.StopLimit = D("59000.00")
	h.mustCode(mt5.RetInvalidPrice, sreq) // a sell limit below its stop is refused
	sreq.StopLimit = D("60200.00")
	h.mustCode(mt5.RetPlaced, sreq)
}

func TestPendingPriceSideAndStopsLevel(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00") // stops level 100 points = 1.00
	h.mustCode(mt5.RetInvalidPrice, pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.10", "60010.00"))
	h.mustCode(mt5.RetInvalidStops, pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.10", "60009.01"))
	h.mustCode(mt5.RetPlaced, pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.10", "60009.00"))
	h.mustCode(mt5.RetInvalidPrice, pending(1001, "BTCUSD", mt5.OrderSellStop, "0.10", "60001.00"))
	h.mustCode(mt5.RetInvalidPrice, pending(1001, "BTCUSD", mt5.OrderBuyStop, "0.10", "60010.005"))
	h.mustCode(mt5.RetInvalidPrice, pending(1001, "US500", mt5.OrderBuyLimit, "0.1", "5100.10")) // tick 0.25
	h.mustCode(mt5.RetPlaced, pending(1001, "US500", mt5.OrderBuyLimit, "0.1", "5100.25"))
	withSL := pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.10", "59000.00")
	withSL.SL = D("58999.50") // closer than the stops level to the open price
	h.mustCode(mt5.RetInvalidStops, withSL)
	withSL.SL, withSL.TP = D("58000.00"), D("58500.00") // TP below a buy's open price
	h.mustCode(mt5.RetInvalidStops, withSL)
	withSL.TP = D("60000.00")
	h.mustCode(mt5.RetPlaced, withSL)
}

func TestModifyAndRemovePending(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	r := h.mustCode(mt5.RetPlaced, pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.10", "59000.00"))
	mod := mt5.TradeRequest{Login: 1001, Action: mt5.ActionModify, Order: r.Order, Price: D("59000.00")}
	h.mustCode(mt5.RetNoChanges, mod)
	mod.Price = D("59500.00")
	seq := h.lastSeq()
	h.mustCode(mt5.RetDone, mod)
	eqStrings(t, "modify facts", kinds(h.factsAfter(seq)), "order:UPDATE:REQUEST_MODIFY", "order:UPDATE:PLACED")
	eqDec(t, "new price", h.openOrders(1001)[0].Price, "59500.00")
	// the old price no longer triggers; the new one does
	h.quote("BTCUSD", "59490.00", "59500.00")
	if len(h.positions(1001)) != 1 {
		t.Fatal("modified order did not trigger at its new price")
	}
	h.mustCode(mt5.RetOrderChanged, mod) // it has left the book
	h.mustCode(mt5.RetInvalid, mt5.TradeRequest{Login: 1002, Action: mt5.ActionRemove, Order: r.Order})

	h.quote("BTCUSD", "60000.00", "60010.00")
	r2 := h.mustCode(mt5.RetPlaced, pending(1001, "BTCUSD", mt5.OrderSellLimit, "0.10", "61000.00"))
	seq = h.lastSeq()
	h.mustCode(mt5.RetDone, mt5.TradeRequest{Login: 1001, Action: mt5.ActionRemove, Order: r2.Order})
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
	r := h.mustCode(mt5.RetPlaced, pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.10", "59000.00"))
	h.quote("BTCUSD", "58990.00", "59000.40") // ask 0.40 above the order: inside the freeze band, not triggered
	h.mustCode(mt5.RetFrozen, mt5.TradeRequest{Login: 1001, Action: mt5.ActionRemove, Order: r.Order})
	h.mustCode(mt5.RetFrozen, mt5.TradeRequest{Login: 1001, Action: mt5.ActionModify, Order: r.Order, Price: D("58000.00")})
	h.quote("BTCUSD", "58990.00", "59000.50")
	h.mustCode(mt5.RetDone, mt5.TradeRequest{Login: 1001, Action: mt5.ActionRemove, Order: r.Order})
}

func TestExpirationKinds(t *testing.T) {
	h := newHarness(t) // Tuesday 12:00 server time
	h.quote("BTCUSD", "60000.00", "60010.00")
	place := func(tt mt5.TimeType, exp time.Time) int64 {
		req := pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.01", "50000.00")
		req.TypeTime = tt
		if !exp.IsZero() {
			req.Expiration = exp.UnixMilli()
		}
		return h.mustCode(mt5.RetPlaced, req).Order
	}
	gtc := place(mt5.TimeGTC, time.Time{})
	day := place(mt5.TimeDay, time.Time{})
	gtd := place(mt5.TimeSpecified, serverTime(2026, 11, 17, 15, 30))
	gtdDay := place(mt5.TimeSpecifiedDay, serverTime(2026, 11, 18, 10, 0))
	state := func(tkt int64) mt5.OrderState {
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
	step := func(at time.Time, want map[int64]mt5.OrderState) {
		t.Helper()
		h.clock.Set(at)
		h.housekeep()
		for tkt, w := range want {
			if got := state(tkt); got != w {
				t.Fatalf("at %v order %d state %v, want %v", at, tkt, got, w)
			}
		}
	}
	step(serverTime(2026, 11, 17, 15, 29), map[int64]mt5.OrderState{gtd: mt5.StatePlaced})
	seq := h.lastSeq()
	step(serverTime(2026, 11, 17, 15, 30), map[int64]mt5.OrderState{gtd: mt5.StateExpired, day: mt5.StatePlaced})
	eqStrings(t, "expiry facts", kinds(h.factsAfter(seq))[:1], "order:DELETE:EXPIRED")
	step(serverTime(2026, 11, 18, 0, 0), map[int64]mt5.OrderState{day: mt5.StateExpired, gtdDay: mt5.StatePlaced})
	step(serverTime(2026, 11, 18, 23, 59), map[int64]mt5.OrderState{gtdDay: mt5.StatePlaced})
	step(serverTime(2026, 11, 19, 0, 0), map[int64]mt5.OrderState{gtdDay: mt5.StateExpired, gtc: mt5.StatePlaced})
	step(serverTime(2026, 12, 30, 0, 0), map[int64]mt5.OrderState{gtc: mt5.StatePlaced})
}

func TestInvalidExpirations10022(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	req := pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.01", "50000.00")
	req.TypeTime = mt5.TimeSpecified
	h.mustCode(mt5.RetInvalidExpiration, req) // no expiration
	req.Expiration = tuesdayNoon.Add(-time.Minute).UnixMilli()
	h.mustCode(mt5.RetInvalidExpiration, req) // in the past
	uni := pending(1001, "UNIUSD", mt5.OrderBuyLimit, "0.01", "5.000")
	uni.TypeTime, uni.Expiration = mt5.TimeSpecified, tuesdayNoon.Add(time.Hour).UnixMilli()
	h.mustCode(mt5.RetInvalidExpiration, uni) // UNIUSD lacks GTD
	uni.TypeTime = mt5.TimeSpecifiedDay
	h.mustCode(mt5.RetPlaced, uni)
}

func TestSLAndTPFireOnTheClosingSide(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	buy := market(1001, "BTCUSD", mt5.OrderBuy, "0.10")
	buy.SL, buy.TP = D("59000.00"), D("61000.00")
	b := h.mustCode(mt5.RetDone, buy)
	sell := market(1001, "BTCUSD", mt5.OrderSell, "0.10")
	sell.SL, sell.TP = D("61000.00"), D("59500.00")
	h.mustCode(mt5.RetDone, sell)
	// the ask reaches the buy's SL level but the bid does not: nothing fires for the buy;
	// the sell's TP (ask <= 59500) does not fire either
	h.quote("BTCUSD", "59001.00", "59501.00")
	if len(h.positions(1001)) != 2 {
		t.Fatal("fired early")
	}
	seq := h.lastSeq()
	h.quote("BTCUSD", "58990.00", "59000.00")
	fs := h.factsAfter(seq)
	var reasons []mt5.DealReason
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
	if len(reasons) != 2 || reasons[0] != mt5.ReasonSL || reasons[1] != mt5.ReasonTP {
		t.Fatalf("reasons %v", reasons)
	}
	if len(h.positions(1001)) != 0 {
		t.Fatal("positions left")
	}
}

func TestModifyPositionStops(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	b := h.mustCode(mt5.RetDone, market(1001, "BTCUSD", mt5.OrderBuy, "0.10"))
	m := mt5.TradeRequest{Login: 1001, Action: mt5.ActionSLTP, Position: b.Position, SL: D("59999.50")}
	h.mustCode(mt5.RetInvalidStops, m) // within 1.00 of the bid
	m.SL = D("59500.00")
	seq := h.lastSeq()
	h.mustCode(mt5.RetDone, m)
	eqStrings(t, "facts", kinds(h.factsAfter(seq)), "position:UPDATE")
	h.mustCode(mt5.RetNoChanges, m)
	m.SL = D("0")
	h.mustCode(mt5.RetDone, m) // removes the stop
	h.quote("BTCUSD", "59000.00", "59010.00")
	if len(h.positions(1001)) != 1 {
		t.Fatal("a removed SL fired")
	}
	h.mustCode(mt5.RetDone, closeReq(1001, b.Position, ""))
	m.SL = D("58000.00")
	h.mustCode(mt5.RetPositionClosed, m)
}

func TestTriggeredOrderTheAccountCannotCarryIsRejected(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	r := h.mustCode(mt5.RetPlaced, pending(1002, "BTCUSD", mt5.OrderBuyLimit, "1", "59000.00"))
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
