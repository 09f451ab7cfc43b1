package sim

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// openMarket opens a position at the market: buy at the ask, sell at the bid.
func (s *Sim) openMarket(a *account, req *mt5.TradeRequest) mt5.TradeResult {
	y, c := s.openingChecks(a, req, req.Type.IsMarket())
	if c != 0 {
		return ret(c)
	}
	buy := req.Type == trading.OrderBuy
	policy, refused, ok := s.marketGate(y, buy, req)
	if !ok {
		return refused
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

// openingChecks are what a request that opens an order (typeOK: of a type its action
// takes) passes first: its symbol exists and allows the type, the trade mode allows the
// side, the volume fits the symbol.
func (s *Sim) openingChecks(a *account, req *mt5.TradeRequest, typeOK bool) (*symbol, trading.Retcode) {
	y := s.symbols[req.Symbol]
	if y == nil {
		return nil, trading.RetInvalid
	}
	if !typeOK {
		return nil, trading.RetInvalidOrder
	}
	if c := s.symbolCheck(a, y, req.Type.IsBuy(), true); c != 0 {
		return nil, c
	}
	if !y.spec.OrderModes.AllowsType(req.Type) {
		return nil, trading.RetInvalidOrder
	}
	if !volumeOK(y, req.Volume) {
		return nil, trading.RetInvalidVolume
	}
	return y, 0
}

// marketGate is what every execution at the market passes before it fills: the symbol takes
// the filling policy, has a quote, and (request or instant execution) the client's price
// still holds. When ok is false, refused is the answer (a requote carries the quote).
func (s *Sim) marketGate(y *symbol, buy bool, req *mt5.TradeRequest) (policy trading.FillPolicy, refused mt5.TradeResult, ok bool) {
	policy, c := fillingCheck(y, req.Filling)
	if c != 0 {
		return policy, ret(c), false
	}
	if !y.hasQuote {
		return policy, ret(trading.RetPriceOff), false
	}
	if c := s.requoteCheck(y, buy, req); c != 0 {
		return policy, mt5.TradeResult{Retcode: c, Bid: y.bid, Ask: y.ask}, false
	}
	return policy, mt5.TradeResult{}, true
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
	p, c := lookupPosition(a, req.Position)
	if c != 0 {
		return ret(c)
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
	policy, refused, ok := s.marketGate(y, !buyPos, req)
	if !ok {
		return refused
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
