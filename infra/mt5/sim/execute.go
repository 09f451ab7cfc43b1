package sim

import (
	"fmt"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// fillPart is one deal's worth of an execution.
type fillPart struct{ vol, price apd.Decimal }

// fillParts splits vol lots into deals against the symbol's liquidity: with no liquidity
// limit one deal fills everything at the quote (plus the configured adverse slippage);
// otherwise each level offers liqLots at one tick worse than the previous. FOK returns
// nothing unless the whole volume fits; IOC returns what fits.
func (s *Sim) fillParts(y *symbol, buy bool, vol apd.Decimal, policy trading.FillPolicy) []fillPart {
	base := y.bid
	if buy {
		base = y.ask
	}
	tickK := pointsPerTick(y)
	px := func(level int) apd.Decimal {
		n := int64(level+y.slippage) * tickK
		if !buy {
			n = -n
		}
		return addPoints(y, base, int(n))
	}
	if y.liqLots.IsZero() || y.liqLevels <= 0 {
		return []fillPart{{vol, px(0)}}
	}
	var parts []fillPart
	rest := vol
	for lvl := 0; lvl < y.liqLevels && rest.Sign() > 0; lvl++ {
		v := y.liqLots
		if rest.Cmp(&v) < 0 {
			v = rest
		}
		parts = append(parts, fillPart{v, px(lvl)})
		rest = dec.Sub(rest, v)
	}
	if rest.Sign() > 0 && policy == trading.FillFOK {
		return nil
	}
	return parts
}

func sumParts(y *symbol, parts []fillPart) (vol, vwap apd.Decimal) {
	var num apd.Decimal
	for _, p := range parts {
		vol = dec.Add(vol, p.vol)
		num = dec.Add(num, dec.Mul(p.vol, p.price))
	}
	if len(parts) == 1 {
		return vol, parts[0].price
	}
	return vol, dec.Round(dec.MustQuo(num, vol), int32(y.spec.Digits+2)) // parts have volume
}

func dealAction(buy bool) trading.DealAction {
	if buy {
		return trading.DealBuy
	}
	return trading.DealSell
}

func posType(buy bool) trading.Side {
	if buy {
		return trading.Buy
	}
	return trading.Sell
}

func orderSide(buy bool) trading.OrderType {
	if buy {
		return trading.OrderBuy
	}
	return trading.OrderSell
}

// execOpen executes order o (already ticketed) as a new position of the order's ticket and
// emits the order, its deals, the position and the account. o.VolumeInitial is the volume asked.
// It changes nothing and fails when the account could not be valued afterwards (checkRates).
func (s *Sim) execOpen(a *account, y *symbol, o *mt5.Order, buy bool, parts []fillPart, reason trading.DealReason) (*position, []*mt5.Deal, error) {
	if err := s.checkRates(a, y); err != nil {
		return nil, nil, err
	}
	comms := make([]apd.Decimal, len(parts))
	for i, part := range parts {
		c, err := s.commissionOf(a, y, part.vol)
		if err != nil {
			return nil, nil, err
		}
		if reason != trading.ReasonRollover {
			comms[i] = c
		}
	}
	now := s.tradeTime()
	total, vwap := sumParts(y, parts)
	p := &position{Position: mt5.Position{Ticket: o.Ticket, Login: a.Login, Symbol: y.spec.Name, Type: posType(buy),
		Volume: total, PriceOpen: vwap, SL: o.SL, TP: o.TP, Reason: reason, Comment: o.Comment,
		TimeCreate: now, TimeUpdate: now}}
	balBefore := a.Balance
	deals := make([]*mt5.Deal, 0, len(parts))
	for i, part := range parts {
		d := &mt5.Deal{Ticket: s.nextDeal, Login: a.Login, Order: o.Ticket, Position: p.Ticket, Symbol: y.spec.Name,
			Action: dealAction(buy), Entry: trading.EntryIn, Reason: reason, Volume: part.vol, Price: part.price,
			Commission: comms[i], Comment: o.Comment, Time: now}
		s.nextDeal++
		a.Balance = dec.Add(a.Balance, d.Commission)
		a.addDeal(d)
		deals = append(deals, d)
	}
	finishOrder(a, o, p.Ticket, total, vwap, now)
	a.positions[p.Ticket] = p
	s.aggAdd(a, p, 1)
	s.posOwner[p.Ticket] = a
	y.holders[a.Login]++
	s.indexPosition(y, p)
	y.day.deals += int64(len(parts))
	y.day.volume = dec.Add(y.day.volume, total)

	s.emitOrder(*o, trading.ChangeDelete)
	for _, d := range deals {
		s.emitDeal(d)
	}
	s.emitPosition(p, trading.ChangeNew)
	if a.Balance.Cmp(&balBefore) != 0 {
		s.emitAccount(a, trading.ChangeUpdate)
	}
	return p, deals, nil
}

// finishOrder marks o filled (partially when total is below its volume) at the
// volume-weighted price vwap unless it carries its own price, ties it to position, and moves
// it to the account's history.
func finishOrder(a *account, o *mt5.Order, position int64, total, vwap apd.Decimal, now int64) {
	o.State = trading.StateFilled
	o.VolumeCurrent = dec.Sub(o.VolumeInitial, total)
	if o.VolumeCurrent.Sign() > 0 {
		o.State = trading.StatePartial
	}
	if o.Price.IsZero() {
		o.Price = vwap
	}
	o.PositionID, o.TimeDone, o.TimeUpdate = position, now, now
	a.addHist(o)
}

// execClose closes the parts' total volume of p with closing order o and emits the order,
// its deals, the position change and the account. It changes nothing and fails when a
// profit or commission could not be converted to the deposit currency (checkRates).
func (s *Sim) execClose(a *account, y *symbol, p *position, o *mt5.Order, parts []fillPart, reason trading.DealReason) ([]*mt5.Deal, error) {
	if err := s.checkRates(a, y); err != nil {
		return nil, err
	}
	profits, comms := make([]apd.Decimal, len(parts)), make([]apd.Decimal, len(parts))
	for i, part := range parts {
		var err error
		if profits[i], err = s.profitIn(a, y, rawProfit(y, p.Type, part.vol, p.PriceOpen, part.price)); err != nil {
			return nil, err
		}
		c, err := s.commissionOf(a, y, part.vol)
		if err != nil {
			return nil, err
		}
		if reason != trading.ReasonRollover {
			comms[i] = c
		}
	}
	now := s.tradeTime()
	total, vwap := sumParts(y, parts)
	buyPos := p.Type == trading.Buy
	swapPart := p.Swap
	if total.Cmp(&p.Volume) < 0 {
		swapPart = round2(dec.MustQuo(dec.Mul(p.Swap, total), p.Volume)) // p.Volume > total > 0
	}
	deals := make([]*mt5.Deal, 0, len(parts))
	for i, part := range parts {
		d := &mt5.Deal{Ticket: s.nextDeal, Login: a.Login, Order: o.Ticket, Position: p.Ticket, Symbol: y.spec.Name,
			Action: dealAction(!buyPos), Entry: trading.EntryOut, Reason: reason, Volume: part.vol, Price: part.price,
			Profit: profits[i], Commission: comms[i], Comment: o.Comment, Time: now}
		if i == 0 {
			d.Swap = swapPart
		}
		s.nextDeal++
		a.Balance = dec.Add(a.Balance, dec.Add(d.Profit, dec.Add(d.Commission, d.Swap)))
		a.addDeal(d)
		deals = append(deals, d)
	}
	finishOrder(a, o, p.Ticket, total, vwap, now)
	s.aggAdd(a, p, -1)
	p.Volume = dec.Sub(p.Volume, total)
	p.Swap = dec.Sub(p.Swap, swapPart)
	p.TimeUpdate = now
	y.day.deals += int64(len(parts))
	y.day.volume = dec.Add(y.day.volume, total)

	s.emitOrder(*o, trading.ChangeDelete)
	for _, d := range deals {
		s.emitDeal(d)
	}
	if p.Volume.Sign() == 0 {
		s.removePosition(a, y, p)
		s.emitPosition(p, trading.ChangeClose)
	} else {
		s.aggAdd(a, p, 1)
		s.emitPosition(p, trading.ChangeUpdate)
	}
	s.emitAccount(a, trading.ChangeUpdate)
	return deals, nil
}

func (s *Sim) removePosition(a *account, y *symbol, p *position) {
	delete(a.positions, p.Ticket)
	delete(s.posOwner, p.Ticket)
	a.closedPos[p.Ticket] = true
	p.ver++
	if y.holders[a.Login]--; y.holders[a.Login] <= 0 {
		delete(y.holders, a.Login)
	}
}

// newOrder tickets a new order of a.
func (s *Sim) newOrder(a *account, y *symbol, t trading.OrderType, vol apd.Decimal, comment string, reason trading.DealReason) *mt5.Order {
	now := s.tradeTime()
	o := &mt5.Order{Ticket: s.nextOrder, Login: a.Login, Symbol: y.spec.Name, Type: t, State: trading.StateStarted,
		VolumeInitial: vol, VolumeCurrent: vol, Reason: reason, Comment: truncComment(comment), TimeSetup: now, TimeUpdate: now}
	s.nextOrder++
	a.addOrderTag(o)
	if t.IsBuy() {
		y.day.buyOrders++
	} else {
		y.day.sellOrders++
	}
	return o
}

// closeAtMarket closes all of p at the current closing price (SL, TP, stop-out). It fails,
// leaving p open, when the close could not be valued (checkRates).
func (s *Sim) closeAtMarket(a *account, y *symbol, p *position, reason trading.DealReason, comment string) error {
	if err := s.checkRates(a, y); err != nil {
		return fmt.Errorf("close position %d (%s): %w", p.Ticket, comment, err)
	}
	buyPos := p.Type == trading.Buy
	o := s.newOrder(a, y, orderSide(!buyPos), p.Volume, comment, reason)
	o.Filling = trading.FillFOK
	_, err := s.execClose(a, y, p, o, []fillPart{{p.Volume, closePrice(y, p.Type)}}, reason)
	return err
}
