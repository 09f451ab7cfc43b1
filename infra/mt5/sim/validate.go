package sim

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/infra/mt5"
)

// The checks below return 0 when the request passes, else the return code MT5 gives.

func ret(c mt5.Retcode) mt5.TradeResult { return mt5.TradeResult{Retcode: c} }

// symbolCheck: trade permission of the account and symbol, and the session.
func (s *Sim) symbolCheck(a *account, y *symbol, buy, opening bool) mt5.Retcode {
	if !a.TradeAllowed {
		return mt5.RetClientDisablesAT
	}
	switch y.spec.TradeMode {
	case mt5.TradeDisabled:
		return mt5.RetTradeDisabled
	case mt5.TradeLongOnly:
		if opening && !buy {
			return mt5.RetLongOnly
		}
	case mt5.TradeShortOnly:
		if opening && buy {
			return mt5.RetShortOnly
		}
	case mt5.TradeCloseOnly:
		if opening {
			return mt5.RetCloseOnly
		}
	case mt5.TradeFull:
	default:
		return mt5.RetTradeDisabled
	}
	if !s.inSession(y, s.nowMs()) {
		return mt5.RetMarketClosed
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

func fillingCheck(y *symbol, f *mt5.FillPolicy) (mt5.FillPolicy, mt5.Retcode) {
	if f == nil {
		if y.spec.FillFlags&mt5.FillFlagIOC != 0 {
			return mt5.FillIOC, 0
		}
		return mt5.FillFOK, 0
	}
	switch *f {
	case mt5.FillFOK:
		if y.spec.FillFlags&mt5.FillFlagFOK != 0 {
			return *f, 0
		}
	case mt5.FillIOC:
		if y.spec.FillFlags&mt5.FillFlagIOC != 0 {
			return *f, 0
		}
	}
	return 0, mt5.RetInvalidFill
}

// stopsCheck validates sl/tp of a buy or sell against reference price ref (the closing
// side of the market for positions, the open price for pending orders).
func (s *Sim) stopsCheck(y *symbol, buy bool, sl, tp, ref apd.Decimal) mt5.Retcode {
	if sl.Sign() < 0 || tp.Sign() < 0 {
		return mt5.RetInvalidStops
	}
	if !sl.IsZero() && y.spec.OrderModes&mt5.ModeSL == 0 || !tp.IsZero() && y.spec.OrderModes&mt5.ModeTP == 0 {
		return mt5.RetInvalidStops
	}
	refK, _ := toPoints(y, ref)
	lvl := int64(y.spec.StopsLevel)
	if !sl.IsZero() {
		if !priceOK(y, sl) {
			return mt5.RetInvalidStops
		}
		k, _ := toPoints(y, sl)
		if buy && !(k < refK && refK-k >= lvl) || !buy && !(k > refK && k-refK >= lvl) {
			return mt5.RetInvalidStops
		}
	}
	if !tp.IsZero() {
		if !priceOK(y, tp) {
			return mt5.RetInvalidStops
		}
		k, _ := toPoints(y, tp)
		if buy && !(k > refK && k-refK >= lvl) || !buy && !(k < refK && refK-k >= lvl) {
			return mt5.RetInvalidStops
		}
	}
	return 0
}

// requoteCheck: under REQUEST and INSTANT execution a price the client saw that is now more
// than Deviation points away is requoted. A zero price accepts the current one.
func (s *Sim) requoteCheck(y *symbol, buy bool, req *mt5.TradeRequest) mt5.Retcode {
	if s.fault.Mode == FaultRequote {
		return mt5.RetRequote
	}
	if y.spec.ExecutionMode != mt5.ExecRequest && y.spec.ExecutionMode != mt5.ExecInstant || req.Price.IsZero() {
		return 0
	}
	k, ok := toPoints(y, req.Price)
	if !ok {
		return mt5.RetInvalidPrice
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
		return mt5.RetRequote
	}
	return 0
}

// groupOpenCheck applies the account group's position rules to opening a position.
func (s *Sim) groupOpenCheck(a *account, y *symbol, buy bool) mt5.Retcode {
	g := a.group
	if g.LimitPositions > 0 && len(a.positions) >= g.LimitPositions {
		return mt5.RetLimitPositions
	}
	if g.HedgeProhibited {
		for _, p := range a.positions {
			if p.Symbol == y.spec.Name && p.Type != posType(buy) {
				return mt5.RetHedgeProhibited
			}
		}
	}
	return 0
}

// volumeLimitCheck: positions plus pending orders of the symbol may not exceed VolumeLimit.
func (s *Sim) volumeLimitCheck(a *account, y *symbol, add apd.Decimal) mt5.Retcode {
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
		return mt5.RetLimitVolume
	}
	return 0
}

// marginCheck: every conversion the trade needs must be possible (10021 otherwise), and free
// margin after adding vol lots at price must not be negative.
func (s *Sim) marginCheck(a *account, y *symbol, vol, price apd.Decimal) mt5.Retcode {
	if err := s.checkRates(a, y); err != nil {
		s.log.Warn("simulator refuses a trade it cannot value", "login", a.Login, "err", err)
		return mt5.RetPriceOff
	}
	need, err := s.marginOf(a, y, vol, price)
	if err != nil {
		return mt5.RetPriceOff // not reached: checkRates covered the margin currency
	}
	f, err := s.figuresOf(a)
	if err != nil {
		return mt5.RetPriceOff // not reached: checkRates covered every symbol a holds
	}
	if after := dec.Sub(f.free, need); after.Sign() < 0 {
		return mt5.RetNoMoney
	}
	return 0
}
