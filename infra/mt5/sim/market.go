package sim

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// openMarket opens a position at the market: buy at the ask, sell at the bid.
func (s *Sim) openMarket(a *account, req *mt5.TradeRequest) mt5.TradeResult {
	y := s.symbols[req.Symbol]
	if y == nil {
		return ret(trading.RetInvalid)
	}
	if req.Type != trading.OrderBuy && req.Type != trading.OrderSell {
		return ret(trading.RetInvalidOrder)
	}
	buy := req.Type == trading.OrderBuy
	if c := s.symbolCheck(a, y, buy, true); c != 0 {
		return ret(c)
	}
	if !y.spec.OrderModes.AllowsType(req.Type) {
		return ret(trading.RetInvalidOrder)
	}
	if !volumeOK(y, req.Volume) {
		return ret(trading.RetInvalidVolume)
	}
	policy, c := fillingCheck(y, req.Filling)
	if c != 0 {
		return ret(c)
	}
	if !y.hasQuote {
		return ret(trading.RetPriceOff)
	}
	if c := s.requoteCheck(y, buy, req); c != 0 {
		return mt5.TradeResult{Retcode: c, Bid: y.bid, Ask: y.ask}
	}
	if c := s.stopsCheck(y, buy, req.SL, req.TP, closePrice(y, posType(buy))); c != 0 {
		return ret(c)
	}
	if c := s.groupOpenCheck(a, y, buy); c != 0 {
		return ret(c)
	}
	if c := s.volumeLimitCheck(a, y, req.Volume); c != 0 {
		return ret(c)
	}
	parts := s.fillParts(y, buy, req.Volume, policy)
	if len(parts) == 0 {
		return ret(trading.RetReject)
	}
	vol, vwap := sumParts(y, parts)
	if c := s.marginCheck(a, y, vol, vwap); c != 0 {
		return ret(c)
	}
	o := s.newOrder(a, y, req.Type, req.Volume, req.Comment, trading.ReasonClient)
	o.Filling, o.Price, o.SL, o.TP = policy, req.Price, req.SL, req.TP
	p, deals, err := s.execOpen(a, y, o, buy, parts, trading.ReasonClient)
	if err != nil { // not reached: marginCheck checked the rates
		return ret(trading.RetPriceOff)
	}
	return s.fillResult(o, p.Ticket, deals, vol, vwap)
}

func (s *Sim) fillResult(o *mt5.Order, pos int64, deals []*mt5.Deal, vol, vwap apd.Decimal) mt5.TradeResult {
	r := mt5.TradeResult{Retcode: trading.RetDone, Order: o.Ticket, Position: pos, Price: vwap, Volume: vol}
	if o.State == trading.StatePartial {
		r.Retcode = trading.RetDonePartial
	}
	for _, d := range deals {
		r.Deals = append(r.Deals, d.Ticket)
	}
	r.Deal = deals[0].Ticket
	return r
}

// closeRequest closes all or part of a position at the market.
func (s *Sim) closeRequest(a *account, req *mt5.TradeRequest) mt5.TradeResult {
	p := a.positions[req.Position]
	if p == nil {
		if a.closedPos[req.Position] {
			return ret(trading.RetPositionClosed)
		}
		return ret(trading.RetInvalid)
	}
	y := s.symbols[p.Symbol]
	if req.Symbol != "" && req.Symbol != p.Symbol {
		return ret(trading.RetInvalid)
	}
	buyPos := p.Type == trading.Buy
	if c := s.symbolCheck(a, y, !buyPos, false); c != 0 {
		return ret(c)
	}
	vol := req.Volume
	if vol.IsZero() {
		vol = p.Volume
	}
	if vol.Sign() < 0 {
		return ret(trading.RetInvalidVolume)
	}
	if vol.Cmp(&p.Volume) > 0 {
		return ret(trading.RetInvalidCloseVolume)
	}
	if vol.Cmp(&p.Volume) < 0 && !volumeOK(y, vol) {
		return ret(trading.RetInvalidVolume)
	}
	if a.group.FIFOClose {
		for _, q := range a.positions {
			if q.Symbol == p.Symbol && q.Ticket < p.Ticket {
				return ret(trading.RetFIFOClose)
			}
		}
	}
	policy, c := fillingCheck(y, req.Filling)
	if c != 0 {
		return ret(c)
	}
	if !y.hasQuote {
		return ret(trading.RetPriceOff)
	}
	if c := s.requoteCheck(y, !buyPos, req); c != 0 {
		return mt5.TradeResult{Retcode: c, Bid: y.bid, Ask: y.ask}
	}
	parts := s.fillParts(y, !buyPos, vol, policy)
	if len(parts) == 0 {
		return ret(trading.RetReject)
	}
	if err := s.checkRates(a, y); err != nil {
		s.log.Warn("simulator refuses a close it cannot value", "login", a.Login, "position", p.Ticket, "err", err)
		return ret(trading.RetPriceOff)
	}
	o := s.newOrder(a, y, orderSide(!buyPos), vol, req.Comment, trading.ReasonClient)
	o.Filling, o.Price = policy, req.Price
	deals, err := s.execClose(a, y, p, o, parts, trading.ReasonClient)
	if err != nil { // not reached: the rates were checked just above
		return ret(trading.RetPriceOff)
	}
	filled, vwap := sumParts(y, parts)
	return s.fillResult(o, p.Ticket, deals, filled, vwap)
}
