package sim

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// pendingPriceCheck: the order price must be on the right side of the market (10015) and
// at least StopsLevel points from it (10016); a stop-limit's limit price must be on the
// far side of its stop price.
func (s *Sim) pendingPriceCheck(y *symbol, t trading.OrderType, price, stopLimit apd.Decimal) trading.Retcode {
	if !priceOK(y, price) {
		return trading.RetInvalidPrice
	}
	isSL := t == trading.OrderBuyStopLimit || t == trading.OrderSellStopLimit
	if isSL && !priceOK(y, stopLimit) || !isSL && !stopLimit.IsZero() {
		return trading.RetInvalidPrice
	}
	pk, _ := toPoints(y, price)
	lvl := int64(y.spec.StopsLevel)
	var wrong bool
	var dist int64
	switch t {
	case trading.OrderBuyLimit:
		wrong, dist = pk >= y.askK, y.askK-pk
	case trading.OrderSellLimit:
		wrong, dist = pk <= y.bidK, pk-y.bidK
	case trading.OrderBuyStop, trading.OrderBuyStopLimit:
		wrong, dist = pk <= y.askK, pk-y.askK
	case trading.OrderSellStop, trading.OrderSellStopLimit:
		wrong, dist = pk >= y.bidK, y.bidK-pk
	}
	if wrong {
		return trading.RetInvalidPrice
	}
	if dist < lvl {
		return trading.RetInvalidStops
	}
	if isSL {
		lk, _ := toPoints(y, stopLimit)
		if t == trading.OrderBuyStopLimit && lk > pk || t == trading.OrderSellStopLimit && lk < pk {
			return trading.RetInvalidPrice
		}
	}
	return 0
}

// openPriceOf is the price a pending order opens its position at.
func openPriceOf(t trading.OrderType, price, stopLimit apd.Decimal) apd.Decimal {
	if t == trading.OrderBuyStopLimit || t == trading.OrderSellStopLimit {
		return stopLimit
	}
	return price
}

// expirationCheck validates time-in-force and expiration and returns the deadline.
func (s *Sim) expirationCheck(y *symbol, tt trading.TimeType, exp int64) (int64, trading.Retcode) {
	if !y.spec.ExpirationModes.Allows(tt) {
		return 0, trading.RetInvalidExpiration
	}
	now := s.nowMs()
	if (tt == trading.TimeSpecified || tt == trading.TimeSpecifiedDay) && exp <= 0 {
		return 0, trading.RetInvalidExpiration
	}
	d := s.deadline(tt, exp, now)
	if d != 0 && d <= now {
		return 0, trading.RetInvalidExpiration
	}
	return d, 0
}

// deadline is when an order of time type tt expires: DAY at the end of its server day,
// GTD at expiration, GTD_DAY at the end of the server day containing expiration.
func (s *Sim) deadline(tt trading.TimeType, exp, setup int64) int64 {
	switch tt {
	case trading.TimeDay:
		return s.serverDayStart(s.serverDay(setup) + 1)
	case trading.TimeSpecified:
		return exp
	case trading.TimeSpecifiedDay:
		return s.serverDayStart(s.serverDay(exp) + 1)
	}
	return 0
}

// frozen: an order whose activation price is within FreezeLevel points of the market may
// not be changed or removed.
func frozen(y *symbol, o *order) bool {
	if y.spec.FreezeLevel == 0 {
		return false
	}
	pk, _ := toPoints(y, o.Price)
	m := y.bidK
	if o.Type.IsBuy() {
		m = y.askK
	}
	d := pk - m
	if d < 0 {
		d = -d
	}
	return d < int64(y.spec.FreezeLevel)
}

func (s *Sim) placePending(a *account, req *mt5.TradeRequest) mt5.TradeResult {
	y, c := s.openingChecks(a, req, req.Type.IsPending())
	if c != 0 {
		return ret(c)
	}
	buy := req.Type.IsBuy()
	if !y.hasQuote {
		return ret(trading.RetPriceOff)
	}
	policy, c := fillingCheck(y, req.Filling)
	if c != 0 {
		return ret(c)
	}
	deadline, c := s.expirationCheck(y, req.TypeTime, req.Expiration)
	if c != 0 {
		return ret(c)
	}
	if c := s.pendingPriceCheck(y, req.Type, req.Price, req.StopLimit); c != 0 {
		return ret(c)
	}
	if c := s.stopsCheck(y, buy, req.SL, req.TP, openPriceOf(req.Type, req.Price, req.StopLimit)); c != 0 {
		return ret(c)
	}
	if g := a.group; g.LimitOrders > 0 && len(a.orders) >= g.LimitOrders {
		return ret(trading.RetLimitOrders)
	}
	if c := s.volumeLimitCheck(a, y, req.Volume); c != 0 {
		return ret(c)
	}
	mo := s.newOrder(a, y, req.Type, req.Volume, req.Comment, trading.ReasonClient)
	mo.Filling, mo.Price, mo.StopLimit, mo.SL, mo.TP = policy, req.Price, req.StopLimit, req.SL, req.TP
	mo.TypeTime = req.TypeTime
	if req.TypeTime == trading.TimeSpecified || req.TypeTime == trading.TimeSpecifiedDay {
		mo.Expiration = req.Expiration
	}
	o := &order{Order: *mo, deadline: deadline}
	a.orders[o.Ticket] = o
	s.orderOwner[o.Ticket] = a
	s.indexOrder(o)
	s.emitRequested(o, trading.StateRequestAdd, trading.ChangeNew)
	return mt5.TradeResult{Retcode: trading.RetPlaced, Order: o.Ticket, Price: o.Price, Volume: o.VolumeInitial}
}

// emitRequested reports a request on a pending order as the platform does: the order in the
// request's state st (the change x it makes), then placed again.
func (s *Sim) emitRequested(o *order, st trading.OrderState, x trading.ChangeAction) {
	o.State = st
	s.emitOrder(o.Order, x)
	o.State = trading.StatePlaced
	s.emitOrder(o.Order, trading.ChangeUpdate)
}

// lookupPending finds an open order of a, or answers why not.
func lookupPending(a *account, ticket int64) (*order, trading.Retcode) {
	if o := a.orders[ticket]; o != nil {
		return o, 0
	}
	if a.histByTkt[ticket] != nil {
		return nil, trading.RetOrderChanged // it has left the book (filled, cancelled, expired)
	}
	return nil, trading.RetInvalid
}

// lookupPosition finds an open position of a, or answers why not.
func lookupPosition(a *account, ticket int64) (*position, trading.Retcode) {
	if p := a.positions[ticket]; p != nil {
		return p, 0
	}
	if a.closedPos[ticket] {
		return nil, trading.RetPositionClosed
	}
	return nil, trading.RetInvalid
}

// pendingToChange finds the open order a modification or removal names and checks that its
// symbol takes the change.
func (s *Sim) pendingToChange(a *account, ticket int64) (*order, *symbol, trading.Retcode) {
	o, c := lookupPending(a, ticket)
	if c != 0 {
		return nil, nil, c
	}
	y := s.symbols[o.Symbol]
	if c := s.symbolCheck(a, y, o.Type.IsBuy(), false); c != 0 {
		return nil, nil, c
	}
	return o, y, 0
}

func (s *Sim) modifyPending(a *account, req *mt5.TradeRequest) mt5.TradeResult {
	o, y, c := s.pendingToChange(a, req.Order)
	if c != 0 {
		return ret(c)
	}
	price, stopLimit := req.Price, req.StopLimit
	if price.IsZero() {
		price = o.Price
	}
	if stopLimit.IsZero() {
		stopLimit = o.StopLimit
	}
	exp := req.Expiration
	if req.TypeTime != trading.TimeSpecified && req.TypeTime != trading.TimeSpecifiedDay {
		exp = 0
	}
	if price.Cmp(&o.Price) == 0 && stopLimit.Cmp(&o.StopLimit) == 0 && req.SL.Cmp(&o.SL) == 0 &&
		req.TP.Cmp(&o.TP) == 0 && req.TypeTime == o.TypeTime && exp == o.Expiration {
		return ret(trading.RetNoChanges)
	}
	if frozen(y, o) {
		return ret(trading.RetFrozen)
	}
	deadline, c := s.expirationCheck(y, req.TypeTime, req.Expiration)
	if c != 0 {
		return ret(c)
	}
	if c := s.pendingPriceCheck(y, o.Type, price, stopLimit); c != 0 {
		return ret(c)
	}
	if c := s.stopsCheck(y, o.Type.IsBuy(), req.SL, req.TP, openPriceOf(o.Type, price, stopLimit)); c != 0 {
		return ret(c)
	}
	o.Price, o.StopLimit, o.SL, o.TP, o.TypeTime, o.Expiration = price, stopLimit, req.SL, req.TP, req.TypeTime, exp
	if req.TypeTime == trading.TimeDay {
		deadline = s.deadline(trading.TimeDay, 0, o.TimeSetup)
	}
	o.deadline = deadline
	o.TimeUpdate = s.tradeTime()
	o.ver++
	s.indexOrder(o)
	s.emitRequested(o, trading.StateRequestModify, trading.ChangeUpdate)
	return mt5.TradeResult{Retcode: trading.RetDone, Order: o.Ticket, Price: o.Price, Volume: o.VolumeCurrent}
}

func (s *Sim) removePending(a *account, req *mt5.TradeRequest) mt5.TradeResult {
	o, y, c := s.pendingToChange(a, req.Order)
	if c != 0 {
		return ret(c)
	}
	if frozen(y, o) {
		return ret(trading.RetFrozen)
	}
	o.State = trading.StateRequestCancel
	s.emitOrder(o.Order, trading.ChangeUpdate)
	s.finishOrder(a, o, trading.StateCanceled)
	return mt5.TradeResult{Retcode: trading.RetDone, Order: o.Ticket}
}

// finishOrder takes o off the book in state st (canceled, expired, rejected).
func (s *Sim) finishOrder(a *account, o *order, st trading.OrderState) {
	delete(a.orders, o.Ticket)
	delete(s.orderOwner, o.Ticket)
	o.ver++
	now := s.tradeTime()
	o.State, o.TimeDone, o.TimeUpdate = st, now, now
	h := o.Order
	a.addHist(&h)
	s.emitOrder(h, trading.ChangeDelete)
}

func (s *Sim) modifySLTP(a *account, req *mt5.TradeRequest) mt5.TradeResult {
	p, c := lookupPosition(a, req.Position)
	if c != 0 {
		return ret(c)
	}
	y := s.symbols[p.Symbol]
	if c := s.symbolCheck(a, y, p.Type == trading.Buy, false); c != 0 {
		return ret(c)
	}
	if req.SL.Cmp(&p.SL) == 0 && req.TP.Cmp(&p.TP) == 0 {
		return ret(trading.RetNoChanges)
	}
	buy := p.Type == trading.Buy
	cp := closePrice(y, p.Type)
	if fl := int64(y.spec.FreezeLevel); fl > 0 {
		ck, _ := toPoints(y, cp)
		for _, st := range []apd.Decimal{p.SL, p.TP} {
			if st.IsZero() {
				continue
			}
			k, _ := toPoints(y, st)
			if d := k - ck; d < fl && d > -fl {
				return ret(trading.RetFrozen)
			}
		}
	}
	if c := s.stopsCheck(y, buy, req.SL, req.TP, cp); c != 0 {
		return ret(c)
	}
	if err := s.checkRates(a, y); err != nil { // the position update carries its profit
		s.log.Warn("simulator refuses a modification it cannot value", "login", a.Login, "position", p.Ticket, "err", err)
		return ret(trading.RetPriceOff)
	}
	p.SL, p.TP, p.TimeUpdate = req.SL, req.TP, s.tradeTime()
	p.ver++
	s.indexPosition(y, p)
	s.emitPosition(p, trading.ChangeUpdate)
	return mt5.TradeResult{Retcode: trading.RetDone, Position: p.Ticket}
}
