package sim

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// The checks below return 0 when the request passes, else the return code MT5 gives.

func ret(c trading.Retcode) mt5.TradeResult { return mt5.TradeResult{Retcode: c} }

// symbolCheck: trade permission of the account and symbol, and the session.
func (s *Sim) symbolCheck(a *account, y *symbol, buy, opening bool) trading.Retcode {
	if !a.TradeAllowed {
		return trading.RetClientDisablesAT
	}
	switch y.spec.TradeMode {
	case trading.TradeDisabled:
		return trading.RetTradeDisabled
	case trading.TradeLongOnly:
		if opening && !buy {
			return trading.RetLongOnly
		}
	case trading.TradeShortOnly:
		if opening && buy {
			return trading.RetShortOnly
		}
	case trading.TradeCloseOnly:
		if opening {
			return trading.RetCloseOnly
		}
	case trading.TradeFull:
	default:
		return trading.RetTradeDisabled
	}
	if !s.inSession(y, s.nowMs()) {
		return trading.RetMarketClosed
	}
	return 0
}

func volumeOK(y *symbol, v apd.Decimal) bool {
	sp := &y.spec
	return v.Sign() > 0 && v.Cmp(&sp.VolumeMin) >= 0 && v.Cmp(&sp.VolumeMax) <= 0 && dec.IsMultiple(v, sp.VolumeStep)
}

// priceOK: positive, a whole number of points and a multiple of the tick size.
func priceOK(y *symbol, p apd.Decimal) bool {
	if p.Sign() <= 0 {
		return false
	}
	if _, ok := toPoints(y, p); !ok {
		return false
	}
	return dec.IsMultiple(p, y.spec.TickSize)
}

func fillingCheck(y *symbol, f *trading.FillPolicy) (trading.FillPolicy, trading.Retcode) {
	if f == nil {
		if y.spec.FillFlags&trading.FillFlagIOC != 0 {
			return trading.FillIOC, 0
		}
		return trading.FillFOK, 0
	}
	switch *f {
	case trading.FillFOK:
		if y.spec.FillFlags&trading.FillFlagFOK != 0 {
			return *f, 0
		}
	case trading.FillIOC:
		if y.spec.FillFlags&trading.FillFlagIOC != 0 {
			return *f, 0
		}
	}
	return 0, trading.RetInvalidFill
}

// stopsCheck validates sl/tp of a buy or sell against reference price ref (the closing
// side of the market for positions, the open price for pending orders).
func (s *Sim) stopsCheck(y *symbol, buy bool, sl, tp, ref apd.Decimal) trading.Retcode {
	if sl.Sign() < 0 || tp.Sign() < 0 {
		return trading.RetInvalidStops
	}
	if !sl.IsZero() && y.spec.OrderModes&trading.ModeSL == 0 || !tp.IsZero() && y.spec.OrderModes&trading.ModeTP == 0 {
		return trading.RetInvalidStops
	}
	refK, _ := toPoints(y, ref)
	lvl := int64(y.spec.StopsLevel)
	if !sl.IsZero() {
		if !priceOK(y, sl) {
			return trading.RetInvalidStops
		}
		k, _ := toPoints(y, sl)
		if buy && !(k < refK && refK-k >= lvl) || !buy && !(k > refK && k-refK >= lvl) {
			return trading.RetInvalidStops
		}
	}
	if !tp.IsZero() {
		if !priceOK(y, tp) {
			return trading.RetInvalidStops
		}
		k, _ := toPoints(y, tp)
		if buy && !(k > refK && k-refK >= lvl) || !buy && !(k < refK && refK-k >= lvl) {
			return trading.RetInvalidStops
		}
	}
	return 0
}

// requoteCheck: under REQUEST and INSTANT execution a price the client saw that is now more
// than Deviation points away is requoted. A zero price accepts the current one.
func (s *Sim) requoteCheck(y *symbol, buy bool, req *mt5.TradeRequest) trading.Retcode {
	if s.fault.Mode == FaultRequote {
		return trading.RetRequote
	}
	if y.spec.ExecutionMode != trading.ExecRequest && y.spec.ExecutionMode != trading.ExecInstant || req.Price.IsZero() {
		return 0
	}
	k, ok := toPoints(y, req.Price)
	if !ok {
		return trading.RetInvalidPrice
	}
	cur := y.bidK
	if buy {
		cur = y.askK
	}
	d := cur - k
	if d < 0 {
		d = -d
	}
	if d > int64(req.Deviation) {
		return trading.RetRequote
	}
	return 0
}

// groupOpenCheck applies the account group's position rules to opening a position.
func (s *Sim) groupOpenCheck(a *account, y *symbol, buy bool) trading.Retcode {
	g := a.group
	if g.LimitPositions > 0 && len(a.positions) >= g.LimitPositions {
		return trading.RetLimitPositions
	}
	if g.HedgeProhibited {
		for _, p := range a.positions {
			if p.Symbol == y.spec.Name && p.Type != posType(buy) {
				return trading.RetHedgeProhibited
			}
		}
	}
	return 0
}

// volumeLimitCheck: positions plus pending orders of the symbol may not exceed VolumeLimit.
func (s *Sim) volumeLimitCheck(a *account, y *symbol, add apd.Decimal) trading.Retcode {
	if y.spec.VolumeLimit.IsZero() {
		return 0
	}
	sum := add
	for _, p := range a.positions {
		if p.Symbol == y.spec.Name {
			sum = dec.Add(sum, p.Volume)
		}
	}
	for _, o := range a.orders {
		if o.Symbol == y.spec.Name {
			sum = dec.Add(sum, o.VolumeCurrent)
		}
	}
	if sum.Cmp(&y.spec.VolumeLimit) > 0 {
		return trading.RetLimitVolume
	}
	return 0
}

// marginCheck: every conversion the trade needs must be possible (10021 otherwise), and free
// margin after adding vol lots at price must not be negative.
func (s *Sim) marginCheck(a *account, y *symbol, vol, price apd.Decimal) trading.Retcode {
	if err := s.checkRates(a, y); err != nil {
		s.log.Warn("simulator refuses a trade it cannot value", "login", a.Login, "err", err)
		return trading.RetPriceOff
	}
	need, err := s.marginOf(a, y, vol, price)
	if err != nil {
		return trading.RetPriceOff // not reached: checkRates covered the margin currency
	}
	f, err := s.figuresOf(a)
	if err != nil {
		return trading.RetPriceOff // not reached: checkRates covered every symbol a holds
	}
	if after := dec.Sub(f.free, need); after.Sign() < 0 {
		return trading.RetNoMoney
	}
	return 0
}
