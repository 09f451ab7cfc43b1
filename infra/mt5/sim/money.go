package sim

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/infra/mt5"
)

// Money in the deposit currency is rounded half-even to 2 places at every booking (profit,
// commission, swap, margin), as MT5 does; account figures are sums of booked amounts.

var (
	one     = dec.New(1, 0)
	hundred = dec.New(100, 0)
	cent    = dec.New(1, -2)
)

func round2(d apd.Decimal) apd.Decimal {
	if d.Form == apd.Finite && d.Exponent == -2 {
		return d // already exactly two places: skip the costly quantize
	}
	return dec.Round(d, 2)
}

// perLeverage divides by the account's leverage, by multiplication when 1/leverage is an
// exact decimal (1:100, 1:500, ...), which is much cheaper than a 34-digit division.
func perLeverage(a *account, v apd.Decimal) apd.Decimal {
	if a.invLevOK {
		return dec.Mul(v, a.invLev)
	}
	return dec.Quo(v, dec.New(int64(a.Leverage), 0))
}

// toUSD is the value of one unit of currency c in USD at the current quotes. USC is a
// hundredth of a USD. Other currencies convert through the symbol cUSD (at its bid) or
// USDc (1/ask).
func (s *Sim) toUSD(c string) (apd.Decimal, bool) {
	switch c {
	case "USD":
		return one, true
	case "USC":
		return cent, true
	}
	if y := s.symbols[c+"USD"]; y != nil && y.hasQuote {
		return y.bid, true
	}
	if y := s.symbols["USD"+c]; y != nil && y.hasQuote {
		return dec.Quo(one, y.ask), true
	}
	return apd.Decimal{}, false
}

// convert converts amount from one currency to another at the current quotes, unrounded.
func (s *Sim) convert(amount apd.Decimal, from, to string) (apd.Decimal, bool) {
	if from == to || amount.IsZero() {
		return amount, true
	}
	if from == "USD" && to == "USC" {
		return dec.Mul(amount, hundred), true
	}
	if from == "USC" && to == "USD" {
		return dec.Mul(amount, cent), true
	}
	rf, ok1 := s.toUSD(from)
	rt, ok2 := s.toUSD(to)
	if !ok1 || !ok2 || rt.IsZero() {
		return apd.Decimal{}, false
	}
	return dec.Quo(dec.Mul(amount, rf), rt), true
}

// closePrice is the price a position of direction t closes at: bid for a buy, ask for a sell.
func closePrice(y *symbol, t mt5.PositionType) apd.Decimal {
	if t == mt5.PositionBuy {
		return y.bid
	}
	return y.ask
}

// rawProfit is the profit in the profit currency of vol lots opened at open and closed at cls.
func rawProfit(y *symbol, t mt5.PositionType, vol, open, cls apd.Decimal) apd.Decimal {
	diff := dec.Sub(cls, open)
	if t == mt5.PositionSell {
		diff = dec.Neg(diff)
	}
	return dec.Mul(dec.Mul(diff, vol), y.spec.ContractSize)
}

// profitIn converts a profit-currency amount to a's deposit currency, rounded.
func (s *Sim) profitIn(a *account, y *symbol, raw apd.Decimal) apd.Decimal {
	v, _ := s.convert(raw, y.spec.CurrencyProfit, a.Currency)
	return round2(v)
}

// marginOf is the margin of vol lots at price in a's deposit currency, rounded.
func (s *Sim) marginOf(a *account, y *symbol, vol, price apd.Decimal) (apd.Decimal, bool) {
	m := dec.Mul(vol, y.spec.ContractSize)
	if y.spec.MarginCalc == mt5.CalcCFDLeverage {
		m = dec.Mul(m, price)
	}
	m = perLeverage(a, m)
	v, ok := s.convert(m, y.spec.CurrencyMargin, a.Currency)
	return round2(v), ok
}

// commissionOf is the (negative) commission of vol lots in a's deposit currency.
func (s *Sim) commissionOf(a *account, y *symbol, vol apd.Decimal) apd.Decimal {
	if y.spec.CommissionPerLot.IsZero() {
		return apd.Decimal{}
	}
	v, _ := s.convert(dec.Mul(y.spec.CommissionPerLot, vol), y.spec.CommissionCurrency, a.Currency)
	return dec.Neg(round2(v))
}

type figures struct {
	profit, equity, margin, free apd.Decimal
}

// figuresOf computes the account's live figures: profit is the floating profit plus the
// accumulated swap of open positions, so equity = balance + credit + profit. Profit and
// margin are converted and rounded once per symbol held (see symAgg), so they can differ
// by rounding from the sum of the positions' individually rounded profits.
func (s *Sim) figuresOf(a *account) figures {
	var f figures
	for sym, g := range a.bySym {
		y := s.symbols[sym]
		raw := dec.Add(dec.Sub(dec.Mul(y.bid, g.buyVol), g.buyVO), dec.Sub(g.sellVO, dec.Mul(y.ask, g.sellVol)))
		raw = dec.Mul(raw, y.spec.ContractSize)
		f.profit = dec.Add(f.profit, dec.Add(s.profitIn(a, y, raw), g.swap))
		m, _ := s.convert(perLeverage(a, g.notional), y.spec.CurrencyMargin, a.Currency)
		f.margin = dec.Add(f.margin, round2(m))
	}
	f.equity = dec.Add(dec.Add(a.Balance, a.Credit), f.profit)
	f.free = dec.Sub(f.equity, f.margin)
	return f
}

// marginLevel is equity/margin in percent, two places; "0.00" with no margin in use.
func (f *figures) marginLevel() apd.Decimal {
	if f.margin.IsZero() {
		return dec.New(0, -2)
	}
	return round2(dec.Quo(dec.Mul(f.equity, hundred), f.margin))
}

func (s *Sim) accountSnapshot(a *account) mt5.Account {
	f := s.figuresOf(a)
	out := a.Account
	out.Equity, out.Margin, out.MarginFree, out.MarginLevel, out.Profit = f.equity, f.margin, f.free, f.marginLevel(), f.profit
	return out
}

func (s *Sim) positionSnapshot(p *position) mt5.Position {
	out := p.Position
	a := s.accounts[p.Login]
	if y := s.symbols[p.Symbol]; y != nil && a != nil && y.hasQuote {
		out.PriceCurrent = closePrice(y, p.Type)
		out.Profit = s.profitIn(a, y, rawProfit(y, p.Type, p.Volume, p.PriceOpen, out.PriceCurrent))
	}
	return out
}
