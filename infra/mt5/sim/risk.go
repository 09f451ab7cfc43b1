package sim

import (
	"fmt"
	"sort"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// checkStopOuts checks every account holding a position on y (after y's quote moved).
func (s *Sim) checkStopOuts(y *symbol) {
	logins := make([]int64, 0, len(y.holders))
	for l := range y.holders {
		logins = append(logins, l)
	}
	sort.Slice(logins, func(i, j int) bool { return logins[i] < logins[j] })
	for _, l := range logins {
		s.checkStopOut(s.accounts[l])
	}
}

// checkStopOut closes the most losing position, one at a time, while the margin level is
// at or below the group's stop-out level. (Margin call is only a level; it closes nothing.)
// A balance left negative once every position is closed is restored to zero by a stop-out
// compensation deal (negative balance protection). An account that cannot be valued (a
// conversion rate is missing) cannot be judged: that is logged as an error, and the check
// runs again on the next tick.
func (s *Sim) checkStopOut(a *account) {
	defer func() {
		if len(a.positions) == 0 && a.Balance.Sign() < 0 {
			d := &mt5.Deal{Ticket: s.nextDeal, Login: a.Login, Action: trading.DealSOCompensation, Entry: trading.EntryIn,
				Profit: dec.Neg(a.Balance), Comment: "stop-out compensation", Time: s.tradeTime()}
			s.nextDeal++
			a.Balance = apd.Decimal{}
			a.addDeal(d)
			s.emitDeal(d)
			s.emitAccount(a, trading.ChangeUpdate)
		}
	}()
	for len(a.positions) > 0 {
		f, err := s.figuresOf(a)
		if err != nil {
			s.log.Error("simulator cannot check a stop-out", "login", a.Login, "err", err)
			return
		}
		// compare unrounded: equity*100 <= stopOut*margin
		lhs, rhs := dec.Mul(f.equity, hundred), dec.Mul(a.group.StopOut, f.margin)
		if f.margin.IsZero() || lhs.Cmp(&rhs) > 0 {
			return
		}
		var worst *position
		var worstP apd.Decimal
		for _, p := range a.positions {
			y := s.symbols[p.Symbol]
			pr, err := s.profitIn(a, y, rawProfit(y, p.Type, p.Volume, p.PriceOpen, closePrice(y, p.Type)))
			if err != nil {
				s.log.Error("simulator cannot check a stop-out", "login", a.Login, "err", err)
				return
			}
			if worst == nil || pr.Cmp(&worstP) < 0 || pr.Cmp(&worstP) == 0 && p.Ticket < worst.Ticket {
				worst, worstP = p, pr
			}
		}
		if err := s.closeAtMarket(a, s.symbols[worst.Symbol], worst, trading.ReasonSO, fmt.Sprintf("[so %s%%]", dec.Fixed(f.marginLevel(), 2))); err != nil {
			s.log.Error("simulator cannot stop out a position", "login", a.Login, "err", err)
			return
		}
	}
}

// rollover charges the swaps of server day d (which has just ended) on every open position
// of a symbol that traded that day; the triple-swap weekday charges three days. Under the
// reopen modes the position is closed at the close price (7) or the bid (8) and reopened
// under a new ticket at that price moved by the swap points.
func (s *Sim) rollover(d int64) {
	wd := weekdayOfDay(d)
	for _, login := range s.loginList {
		a := s.accounts[login]
		if len(a.positions) == 0 {
			continue
		}
		tickets := make([]int64, 0, len(a.positions))
		for t := range a.positions {
			tickets = append(tickets, t)
		}
		sort.Slice(tickets, func(i, j int) bool { return tickets[i] < tickets[j] })
		for _, t := range tickets {
			p := a.positions[t]
			y := s.symbols[p.Symbol]
			if len(y.spec.Sessions[wd]) == 0 || y.spec.SwapMode == trading.SwapDisabled {
				continue
			}
			mult := int64(1)
			if y.spec.Swap3Days == trading.Weekday(wd) {
				mult = 3
			}
			s.swapPosition(a, y, p, mult)
		}
	}
}

func (s *Sim) swapPosition(a *account, y *symbol, p *position, mult int64) {
	sp := &y.spec
	buy := p.Type == trading.Buy
	rate := sp.SwapShort
	if buy {
		rate = sp.SwapLong
	}
	rate = dec.Mul(rate, dec.New(mult, 0))
	var amt apd.Decimal
	cur := sp.CurrencyProfit
	switch sp.SwapMode {
	case trading.SwapByPoints:
		amt = dec.Mul(dec.Mul(dec.Mul(rate, sp.Point), sp.ContractSize), p.Volume)
	case trading.SwapBySymbolCurrency:
		amt, cur = dec.Mul(rate, p.Volume), sp.CurrencyBase
	case trading.SwapByMarginCurrency:
		amt, cur = dec.Mul(rate, p.Volume), sp.CurrencyMargin
	case trading.SwapByGroupCurrency:
		amt, cur = dec.Mul(rate, p.Volume), a.Currency
	case trading.SwapByProfitCurrency:
		amt = dec.Mul(rate, p.Volume)
	case trading.SwapByInterestCurrent, trading.SwapByInterestOpen:
		price := closePrice(y, p.Type)
		if sp.SwapMode == trading.SwapByInterestOpen {
			price = p.PriceOpen
		}
		amt = dec.MustQuo(dec.Mul(dec.Mul(dec.Mul(price, sp.ContractSize), p.Volume), rate), dec.New(36000, 0))
	case trading.SwapReopenByClose, trading.SwapReopenByBid:
		s.reopen(a, y, p, rate)
		return
	default:
		return
	}
	v, err := s.convert(amt, cur, a.Currency)
	if err == nil {
		err = s.checkRates(a, y) // the position's snapshot is published with its figures
	}
	if err != nil {
		// The swap is not charged rather than charged as zero; the error names the position.
		s.log.Error("simulator cannot charge a swap", "login", a.Login, "position", p.Ticket, "err", err)
		return
	}
	s.aggAdd(a, p, -1)
	p.Swap = dec.Add(p.Swap, round2(v))
	s.aggAdd(a, p, 1)
	p.TimeUpdate = s.tradeTime()
	s.emitPosition(p, trading.ChangeUpdate)
}

func (s *Sim) reopen(a *account, y *symbol, p *position, points apd.Decimal) {
	if err := s.checkRates(a, y); err != nil {
		s.log.Error("simulator cannot reopen a position at rollover", "login", a.Login, "position", p.Ticket, "err", err)
		return
	}
	buy := p.Type == trading.Buy
	cls := closePrice(y, p.Type)
	if y.spec.SwapMode == trading.SwapReopenByBid {
		cls = y.bid
	}
	shift := dec.Mul(points, y.spec.Point)
	reopenAt := dec.Add(cls, shift)
	if buy {
		reopenAt = dec.Sub(cls, shift)
	}
	reopenAt = dec.Round(reopenAt, int32(y.spec.Digits))
	vol, sl, tp := p.Volume, p.SL, p.TP
	co := s.newOrder(a, y, orderSide(!buy), vol, "[rollover]", trading.ReasonRollover)
	// Neither can fail: the rates were checked above, under the same lock and quotes.
	if _, err := s.execClose(a, y, p, co, []fillPart{{vol, cls}}, trading.ReasonRollover); err != nil {
		panic(fmt.Sprintf("sim: rollover close of %d after checkRates: %v", p.Ticket, err))
	}
	oo := s.newOrder(a, y, orderSide(buy), vol, "[rollover]", trading.ReasonRollover)
	oo.SL, oo.TP = sl, tp
	if _, _, err := s.execOpen(a, y, oo, buy, []fillPart{{vol, reopenAt}}, trading.ReasonRollover); err != nil {
		panic(fmt.Sprintf("sim: rollover reopen of %d after checkRates: %v", p.Ticket, err))
	}
}
