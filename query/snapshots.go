package query

import (
	"context"
	"errors"
	"sort"

	"tradesvc/events"
)

// SymbolQuery asks a market read for one symbol, or for every symbol when Symbol is empty.
type SymbolQuery struct {
	Symbol string
}

// SnapshotHandler answers the market reads that name one symbol or none from the latest
// snapshot S the in-memory market projection holds of each symbol, rendered as R at the
// symbol's digits: GET /v1/ticker/price and /v1/ticker/bookTicker read the quotes, GET
// /v1/ticker/24hr the day statistics. The three differ only in what they read and render,
// so they are one handler.
type SnapshotHandler[S, R any] struct {
	latest   func(symbol string) (S, bool)
	all      func() []S
	symbolOf func(S) string
	symbols  SymbolLookup
	render   func(S, int32) R
}

// Handle returns one snapshot when q.Symbol is set (-1121 if the symbol is unknown, -5003 if
// it has no snapshot yet) or the snapshots of every symbol that has one, sorted by symbol; a
// snapshot of a symbol no longer listed is not shown.
func (h SnapshotHandler[S, R]) Handle(ctx context.Context, q SymbolQuery) ([]R, error) {
	if q.Symbol != "" {
		spec, err := lookupSymbol(ctx, h.symbols, q.Symbol)
		if err != nil {
			return nil, err
		}
		s, ok := h.latest(q.Symbol)
		if !ok {
			return nil, events.Reject(events.CodeNoPrice, "No price for the symbol.")
		}
		return []R{h.render(s, spec.Digits)}, nil
	}
	all := h.all()
	sort.Slice(all, func(i, j int) bool { return h.symbolOf(all[i]) < h.symbolOf(all[j]) })
	out := make([]R, 0, len(all))
	for _, s := range all {
		d, ok, err := digitsOf(ctx, h.symbols, h.symbolOf(s))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, h.render(s, d))
		}
	}
	return out, nil
}

// quoteSnapshots is a SnapshotHandler over the latest quotes.
func quoteSnapshots[R any](quotes QuoteReader, symbols SymbolLookup, render func(Quote, int32) R) (SnapshotHandler[Quote, R], error) {
	if quotes == nil || symbols == nil {
		return SnapshotHandler[Quote, R]{}, errors.New("query: nil QuoteReader or SymbolLookup")
	}
	return SnapshotHandler[Quote, R]{latest: quotes.Quote, all: quotes.Quotes,
		symbolOf: func(q Quote) string { return q.Symbol }, symbols: symbols, render: render}, nil
}
