package sim

import (
	"fmt"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// Money in the deposit currency is rounded half-even to 2 places at every booking (profit,
// commission, swap, margin), as MT5 does; account figures are sums of booked amounts.
//
// A conversion the quotes cannot make is an error (NoRateError), never a zero: a trade that
// would need it is refused with 10021 (no prices) before anything changes (checkRates), and a
// read of figures that need it fails.

// NoRateError says that no quote converts one currency into another (no cUSD or USDc symbol
// with a quote, or a zero one).
type NoRateError struct{ From, To string }

func (e *NoRateError) Error() string {
	return fmt.Sprintf("sim: no quote converts %s to %s", e.From, e.To)
}

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
	return dec.MustQuo(v, dec.New(int64(a.Leverage), 0)) // the seed refuses a leverage below 1
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
		r, err := dec.Quo(one, y.ask)
		return r, err == nil // a zero ask is no rate
	}
	return apd.Decimal{}, false
}

// convert converts amount from one currency to another at the current quotes, unrounded.
// It fails with a *NoRateError when the quotes cannot make the conversion.
func (s *Sim) convert(amount apd.Decimal, from, to string) (apd.Decimal, error) {
	if from == to || amount.IsZero() {
		return amount, nil
	}
	if from == "USD" && to == "USC" {
		return dec.Mul(amount, hundred), nil
	}
	if from == "USC" && to == "USD" {
		return dec.Mul(amount, cent), nil
	}
	rf, ok1 := s.toUSD(from)
	rt, ok2 := s.toUSD(to)
	if !ok1 || !ok2 || rt.IsZero() {
		return apd.Decimal{}, &NoRateError{From: from, To: to}
	}
	return dec.MustQuo(dec.Mul(amount, rf), rt), nil // rt is not zero
}

// checkRates fails unless every conversion that valuing account a needs is possible now:
// the profit, margin and commission currencies of every symbol a holds and of ys (the
// symbol about to be traded). Operations that change an account call it before changing
// anything, so the figures they then publish can always be computed.
func (s *Sim) checkRates(a *account, ys ...*symbol) error {
	check := func(y *symbol) error {
		curs := []string{y.spec.CurrencyProfit, y.spec.CurrencyMargin}
		if !y.spec.CommissionPerLot.IsZero() {
			curs = append(curs, y.spec.CommissionCurrency)
		}
		for _, c := range curs {
			if _, err := s.convert(one, c, a.Currency); err != nil {
				return fmt.Errorf("%s: %w", y.spec.Name, err)
			}
		}
		return nil
	}
	for _, y := range ys {
		if err := check(y); err != nil {
			return err
		}
	}
	for sym := range a.bySym {
		if err := check(s.symbols[sym]); err != nil {
			return err
		}
	}
	return nil
}

// closePrice is the price a position of direction t closes at: bid for a buy, ask for a sell.
func closePrice(y *symbol, t trading.Side) apd.Decimal {
	if t == trading.Buy {
		return y.bid
	}
	return y.ask
}

// rawProfit is the profit in the profit currency of vol lots opened at open and closed at cls.
func rawProfit(y *symbol, t trading.Side, vol, open, cls apd.Decimal) apd.Decimal {
	diff := dec.Sub(cls, open)
	if t == trading.Sell {
		diff = dec.Neg(diff)
	}
	return dec.Mul(dec.Mul(diff, vol), y.spec.ContractSize)
}

// profitIn converts a profit-currency amount to a's deposit currency, rounded.
func (s *Sim) profitIn(a *account, y *symbol, raw apd.Decimal) (apd.Decimal, error) {
	v, err := s.convert(raw, y.spec.CurrencyProfit, a.Currency)
	if err != nil {
		return apd.Decimal{}, fmt.Errorf("profit of %s: %w", y.spec.Name, err)
	}
	return round2(v), nil
}

// marginOf is the margin of vol lots at price in a's deposit currency, rounded.
func (s *Sim) marginOf(a *account, y *symbol, vol, price apd.Decimal) (apd.Decimal, error) {
	m := dec.Mul(vol, y.spec.ContractSize)
	if y.spec.MarginCalc == mt5.CalcCFDLeverage {
		m = dec.Mul(m, price)
	}
	m = perLeverage(a, m)
	v, err := s.convert(m, y.spec.CurrencyMargin, a.Currency)
	if err != nil {
		return apd.Decimal{}, fmt.Errorf("margin of %s: %w", y.spec.Name, err)
	}
	return round2(v), nil
}

// commissionOf is the (negative) commission of vol lots in a's deposit currency.
func (s *Sim) commissionOf(a *account, y *symbol, vol apd.Decimal) (apd.Decimal, error) {
	if y.spec.CommissionPerLot.IsZero() {
		return apd.Decimal{}, nil
	}
	v, err := s.convert(dec.Mul(y.spec.CommissionPerLot, vol), y.spec.CommissionCurrency, a.Currency)
	if err != nil {
		return apd.Decimal{}, fmt.Errorf("commission of %s: %w", y.spec.Name, err)
	}
	return dec.Neg(round2(v)), nil
}

type figures struct {
	profit, equity, margin, free apd.Decimal
}

// figuresOf computes the account's live figures: profit is the floating profit plus the
// accumulated swap of open positions, so equity = balance + credit + profit. Profit and
// margin are converted and rounded once per symbol held (see symAgg), so they can differ
// by rounding from the sum of the positions' individually rounded profits.
func (s *Sim) figuresOf(a *account) (figures, error) {
	var f figures
	for sym, g := range a.bySym {
		y := s.symbols[sym]
		raw := dec.Add(dec.Sub(dec.Mul(y.bid, g.buyVol), g.buyVO), dec.Sub(g.sellVO, dec.Mul(y.ask, g.sellVol)))
		raw = dec.Mul(raw, y.spec.ContractSize)
		pr, err := s.profitIn(a, y, raw)
		if err != nil {
			return figures{}, fmt.Errorf("account %d: %w", a.Login, err)
		}
		f.profit = dec.Add(f.profit, dec.Add(pr, g.swap))
		m, err := s.convert(perLeverage(a, g.notional), y.spec.CurrencyMargin, a.Currency)
		if err != nil {
			return figures{}, fmt.Errorf("account %d: margin of %s: %w", a.Login, sym, err)
		}
		f.margin = dec.Add(f.margin, round2(m))
	}
	f.equity = dec.Add(dec.Add(a.Balance, a.Credit), f.profit)
	f.free = dec.Sub(f.equity, f.margin)
	return f, nil
}

// marginLevel is equity/margin in percent, two places; "0.00" with no margin in use.
func (f *figures) marginLevel() apd.Decimal {
	if f.margin.IsZero() {
		return dec.New(0, -2)
	}
	return round2(dec.MustQuo(dec.Mul(f.equity, hundred), f.margin)) // margin is not zero
}

func (s *Sim) accountSnapshot(a *account) (mt5.Account, error) {
	f, err := s.figuresOf(a)
	if err != nil {
		return mt5.Account{}, err
	}
	out := a.Account
	out.Equity, out.Margin, out.MarginFree, out.MarginLevel, out.Profit = f.equity, f.margin, f.free, f.marginLevel(), f.profit
	return out, nil
}

func (s *Sim) positionSnapshot(p *position) (mt5.Position, error) {
	out := p.Position
	a := s.accounts[p.Login]
	if y := s.symbols[p.Symbol]; y != nil && a != nil && y.hasQuote {
		out.PriceCurrent = closePrice(y, p.Type)
		pr, err := s.profitIn(a, y, rawProfit(y, p.Type, p.Volume, p.PriceOpen, out.PriceCurrent))
		if err != nil {
			return mt5.Position{}, fmt.Errorf("position %d: %w", p.Ticket, err)
		}
		out.Profit = pr
	}
	return out, nil
}
