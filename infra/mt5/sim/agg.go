package sim

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// symAgg sums an account's open positions on one symbol so that the account's figures cost
// one computation per symbol held rather than per position (an account may hold thousands).
// All sums are exact decimals; they are converted and rounded once per symbol.
type symAgg struct {
	n               int
	buyVol, buyVO   apd.Decimal // lots, sum of lots*open
	sellVol, sellVO apd.Decimal
	swap            apd.Decimal // deposit currency
	notional        apd.Decimal // sum of lots*contract (forex) or lots*contract*open (CFD)
}

func (s *Sim) aggOf(a *account, sym string) *symAgg {
	g := a.bySym[sym]
	if g == nil {
		g = &symAgg{}
		a.bySym[sym] = g
	}
	return g
}

// aggAdd adds (sign +1) or removes (sign -1) p's contribution.
func (s *Sim) aggAdd(a *account, p *position, sign int64) {
	y := s.symbols[p.Symbol]
	g := s.aggOf(a, p.Symbol)
	sg := dec.New(sign, 0)
	vol := dec.Mul(p.Volume, sg)
	vo := dec.Mul(vol, p.PriceOpen)
	if p.Type == trading.Buy {
		g.buyVol, g.buyVO = dec.Add(g.buyVol, vol), dec.Add(g.buyVO, vo)
	} else {
		g.sellVol, g.sellVO = dec.Add(g.sellVol, vol), dec.Add(g.sellVO, vo)
	}
	g.swap = dec.Add(g.swap, dec.Mul(p.Swap, sg))
	nt := dec.Mul(vol, y.spec.ContractSize)
	if y.spec.MarginCalc == mt5.CalcCFDLeverage {
		nt = dec.Mul(nt, p.PriceOpen)
	}
	g.notional = dec.Add(g.notional, nt)
	g.n += int(sign)
	if g.n == 0 {
		delete(a.bySym, p.Symbol)
	}
}
