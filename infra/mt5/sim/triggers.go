package sim

import (
	"context"
	"fmt"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
)

// indexOrder (re)inserts a pending order's trigger and expiry entries at its current version.
func (s *Sim) indexOrder(o *order) {
	y := s.symbols[o.Symbol]
	k, _ := toPoints(y, o.Price)
	e := trigEntry{key: k, tkt: o.Ticket, ver: o.ver}
	switch o.Type {
	case trading.OrderBuyLimit:
		y.buyLimit.push(e)
	case trading.OrderSellLimit:
		y.sellLimit.push(e)
	case trading.OrderBuyStop, trading.OrderBuyStopLimit:
		y.buyStop.push(e)
	case trading.OrderSellStop, trading.OrderSellStopLimit:
		y.sellStop.push(e)
	}
	if o.deadline > 0 {
		s.expiries.push(trigEntry{key: o.deadline, tkt: o.Ticket, ver: o.ver})
	}
}

// indexPosition (re)inserts a position's SL and TP entries at its current version.
func (s *Sim) indexPosition(y *symbol, p *position) {
	index := func(level apd.Decimal, buys, sells *trigHeap) {
		if level.IsZero() {
			return
		}
		k, _ := toPoints(y, level)
		if p.Type == trading.Buy {
			buys.push(trigEntry{key: k, tkt: p.Ticket, ver: p.ver})
		} else {
			sells.push(trigEntry{key: k, tkt: p.Ticket, ver: p.ver})
		}
	}
	index(p.SL, &y.buySL, &y.sellSL)
	index(p.TP, &y.buyTP, &y.sellTP)
}

// validOrder and validPosition report whether a heap entry still names the open order or
// position as it is (not a version a change has left behind).
func (s *Sim) validOrder(e trigEntry) bool {
	o := owned(s.orderOwner, e.tkt, func(a *account) map[int64]*order { return a.orders })
	return o != nil && o.ver == e.ver
}

func (s *Sim) validPosition(e trigEntry) bool {
	p := owned(s.posOwner, e.tkt, func(a *account) map[int64]*position { return a.positions })
	return p != nil && p.ver == e.ver
}

// owned is the item of ticket tkt in the map of its owner (owners), nil when the ticket has
// no owner or the owner no such item.
func owned[T any](owners map[int64]*account, tkt int64, items func(*account) map[int64]*T) *T {
	if a := owners[tkt]; a != nil {
		return items(a)[tkt]
	}
	return nil
}

// checkTriggers fires what the symbol's current quote reaches: stops first (so a stop-limit
// that becomes a limit can fill on the same tick), then limits, then position SL/TP.
func (s *Sim) checkTriggers(y *symbol) {
	for _, hm := range []struct {
		h *trigHeap
		m int64
	}{{&y.buyStop, y.askK}, {&y.sellStop, y.bidK}, {&y.buyLimit, y.askK}, {&y.sellLimit, y.bidK}} {
		for {
			e, ok := hm.h.top(s.validOrder)
			if !ok || !hm.h.fires(hm.m, e.key) {
				break
			}
			hm.h.pop()
			s.triggerOrder(y, e.tkt)
		}
	}
	for _, hm := range []struct {
		h  *trigHeap
		m  int64
		sl bool
	}{{&y.buySL, y.bidK, true}, {&y.buyTP, y.bidK, false}, {&y.sellSL, y.askK, true}, {&y.sellTP, y.askK, false}} {
		for {
			e, ok := hm.h.top(s.validPosition)
			if !ok || !hm.h.fires(hm.m, e.key) {
				break
			}
			hm.h.pop()
			s.triggerStop(y, e.tkt, hm.sl)
		}
	}
}

func (s *Sim) triggerOrder(y *symbol, tkt int64) {
	a := s.orderOwner[tkt]
	o := a.orders[tkt]
	switch o.Type {
	case trading.OrderBuyStopLimit, trading.OrderSellStopLimit:
		// the stop is touched: the order becomes a limit order at its stop-limit price
		if o.Type == trading.OrderBuyStopLimit {
			o.Type = trading.OrderBuyLimit
		} else {
			o.Type = trading.OrderSellLimit
		}
		o.Price, o.StopLimit = o.StopLimit, apd.Decimal{}
		o.TimeUpdate = s.tradeTime()
		o.ver++
		s.indexOrder(o)
		s.emitOrder(o.Order, trading.ChangeUpdate)
		return
	}
	s.fillPending(a, y, o)
}

// fillPending executes a triggered limit or stop order at the current market.
func (s *Sim) fillPending(a *account, y *symbol, o *order) {
	buy := o.Type.IsBuy()
	price := y.bid
	if buy {
		price = y.ask
	}
	c := s.groupOpenCheck(a, y, buy)
	if c == 0 {
		c = s.marginCheck(a, y, o.VolumeCurrent, price)
	}
	if c != 0 {
		// MT5 rejects a triggered order the account cannot carry
		s.finishOrder(a, o, trading.StateRejected)
		return
	}
	delete(a.orders, o.Ticket)
	delete(s.orderOwner, o.Ticket)
	o.ver++
	h := o.Order
	if _, _, err := s.execOpen(a, y, &h, buy, []fillPart{{o.VolumeCurrent, price}}, o.Reason); err != nil {
		// marginCheck checked the rates under this lock: a failure is a broken invariant.
		panic(fmt.Sprintf("sim: triggered order %d after marginCheck: %v", o.Ticket, err))
	}
}

func (s *Sim) triggerStop(y *symbol, tkt int64, sl bool) {
	a := s.posOwner[tkt]
	p := a.positions[tkt]
	reason, what, lvl := trading.ReasonTP, "tp", p.TP
	if sl {
		reason, what, lvl = trading.ReasonSL, "sl", p.SL
	}
	if err := s.closeAtMarket(a, y, p, reason, fmt.Sprintf("[%s %s]", what, dec.Fixed(lvl, int32(y.spec.Digits)))); err != nil {
		s.log.Error("simulator cannot execute a stop; the position stays open", "login", a.Login, "position", tkt,
			"stop", what, "err", err)
	}
}

// Housekeep runs the time-driven work at the clock's current time: expirations, rollover
// (swaps) and stop-out checks. The background loop calls it; tests call it after moving
// their clock. It returns once the resulting facts are durable, or the journal's error when
// they could not be made durable.
func (s *Sim) Housekeep() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	now := s.nowMs()
	for len(s.expiries.e) > 0 && s.expiries.e[0].key <= now {
		e := s.expiries.e[0]
		s.expiries.pop()
		if !s.validOrder(e) {
			continue
		}
		a := s.orderOwner[e.tkt]
		o := a.orders[e.tkt]
		if o.deadline != e.key {
			continue
		}
		s.finishOrder(a, o, trading.StateExpired)
	}
	if day := s.serverDay(now); s.rolloverDay < day {
		for s.rolloverDay < day {
			s.rollover(s.rolloverDay)
			s.rolloverDay++
		}
		s.emitMeta(meta{RolloverDay: s.rolloverDay})
	}
	for _, login := range s.loginList {
		if a := s.accounts[login]; len(a.positions) > 0 {
			s.checkStopOut(a)
		}
	}
	if err := s.commitAndWait(context.Background()); err != nil {
		return fmt.Errorf("sim: housekeeping facts not durable: %w", err)
	}
	return nil
}
