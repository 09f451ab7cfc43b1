package query

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
)

// PositionLister lists a login's open positions (rm.positions).
type PositionLister interface {
	// OpenPositions returns the login's open positions (of one symbol when symbol is not
	// empty), ordered by position id.
	OpenPositions(ctx context.Context, login int64, symbol string) ([]trading.Position, error)
}

// PositionsQuery asks for the open positions of Login, of Symbol when it is set.
type PositionsQuery struct {
	Login  int64
	Symbol string
}

// PositionsHandler answers GET /v1/positions.
type PositionsHandler struct {
	withSymbols[PositionLister]
	quotes   QuoteReader
	accounts AccountReader
}

// NewPositionsHandler builds the handler.
func NewPositionsHandler(positions PositionLister, symbols SymbolLookup, quotes QuoteReader, accounts AccountReader) (PositionsHandler, error) {
	if positions == nil || symbols == nil || quotes == nil || accounts == nil {
		return PositionsHandler{}, errors.New("query: nil PositionLister, SymbolLookup, QuoteReader or AccountReader")
	}
	return PositionsHandler{withSymbols: withSymbols[PositionLister]{read: positions, symbols: symbols},
		quotes: quotes, accounts: accounts}, nil
}

// Handle returns the position records ordered by position id; an unknown symbol is -1121.
// The trade server reports a position's profit only when the position changes, so the
// floating profit is recomputed from the latest quote as the trade server computes it
// (closing side of the market, profit currency converted to the deposit currency through
// quotes, rounded half-even to cents); when a rate is missing the last reported profit is
// shown.
func (h PositionsHandler) Handle(ctx context.Context, q PositionsQuery) ([]PositionRecord, error) {
	positions, err := openOf(ctx, h.withSymbols, q.Login, q.Symbol, "positions", h.read.OpenPositions)
	if err != nil {
		return nil, err
	}
	currency := ""
	if len(positions) > 0 {
		acct, ok, err := h.accounts.Account(ctx, q.Login)
		if err != nil {
			return nil, fmt.Errorf("read account %d: %w", q.Login, err)
		}
		if ok {
			currency = acct.Currency
		}
	}
	return renderWithSpecs(ctx, h.symbols, positions, func(p trading.Position) string { return p.Symbol },
		func(p trading.Position, s symbolSpec) PositionRecord { return h.record(p, s, currency) })
}

// record renders a position; with a quote of a listed symbol it shows the current price and
// the floating profit in the deposit currency.
func (h PositionsHandler) record(p trading.Position, s symbolSpec, currency string) PositionRecord {
	sd := s.digits()
	r := PositionRecord{PositionID: p.PositionID, Login: p.Login, Symbol: p.Symbol, Side: p.Direction.String(),
		Volume: plain(p.Volume), OpenPrice: sd.price(p.PriceOpen), SL: sd.stop(p.SL), TP: sd.stop(p.TP),
		Profit: money(p.Profit), Swap: money(p.Swap), Comment: p.Comment, OpenTime: p.TimeOpen,
		UpdateTime: p.UpdateTime}
	if qt, ok := h.quotes.Quote(p.Symbol); ok && s.ok {
		cur := qt.Bid // a buy closes at the bid, a sell at the ask
		if p.Direction == 1 {
			cur = qt.Ask
		}
		r.CurrentPrice = sd.price(cur)
		if profit, ok := h.floatingProfit(p, s.SymbolSpec, cur, currency); ok {
			r.Profit = money(profit)
		}
	}
	return r
}

// floatingProfit is (close - open) * volume * contract size (negated for a sell) in the
// profit currency, converted to the deposit currency and rounded to cents.
func (h PositionsHandler) floatingProfit(p trading.Position, spec trading.SymbolSpec, cur apd.Decimal, currency string) (apd.Decimal, bool) {
	if currency == "" {
		return apd.Decimal{}, false
	}
	diff := dec.Sub(cur, p.PriceOpen)
	if p.Direction == 1 {
		diff = dec.Neg(diff)
	}
	raw := dec.Mul(dec.Mul(diff, p.Volume), spec.ContractSize)
	v, ok := h.convert(raw, spec.CurrencyProfit, currency)
	if !ok {
		return apd.Decimal{}, false
	}
	return dec.Round(v, 2), true
}

// convert converts amount between currencies at the latest quotes, unrounded: USC is a
// hundredth of a USD; other currencies go through USD via the symbol cUSD (its bid) or USDc
// (1/ask).
func (h PositionsHandler) convert(amount apd.Decimal, from, to string) (apd.Decimal, bool) {
	switch {
	case from == to || amount.IsZero():
		return amount, true
	case from == "USD" && to == "USC":
		return dec.Mul(amount, dec.New(100, 0)), true
	case from == "USC" && to == "USD":
		return dec.Mul(amount, dec.New(1, -2)), true
	}
	rf, ok1 := h.toUSD(from)
	rt, ok2 := h.toUSD(to)
	if !ok1 || !ok2 {
		return apd.Decimal{}, false
	}
	v, err := dec.Quo(dec.Mul(amount, rf), rt)
	return v, err == nil // a zero rate is no rate: the figure is left out, not zero
}

func (h PositionsHandler) toUSD(c string) (apd.Decimal, bool) {
	switch c {
	case "USD":
		return dec.New(1, 0), true
	case "USC":
		return dec.New(1, -2), true
	}
	if q, ok := h.quotes.Quote(c + "USD"); ok {
		return q.Bid, true
	}
	if q, ok := h.quotes.Quote("USD" + c); ok {
		if r, err := dec.Quo(dec.New(1, 0), q.Ask); err == nil { // a zero ask is no rate
			return r, true
		}
	}
	return apd.Decimal{}, false
}
