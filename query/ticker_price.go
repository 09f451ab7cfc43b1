package query

import (
	"context"
	"errors"
	"sort"

	"tradesvc/events"
)

// QuoteReader is the in-memory market projection's view of the latest quotes and the tick
// buffer. It never blocks on I/O, hence no context.
type QuoteReader interface {
	// Quote returns the latest quote of symbol; ok is false before the first tick.
	Quote(symbol string) (Quote, bool)
	// Quotes returns the latest quote of every symbol that has one.
	Quotes() []Quote
	// Ticks returns up to limit buffered ticks of symbol, oldest first.
	Ticks(symbol string, limit int) []Quote
}

// TickerPrice asks for the price ticker of one symbol, or of all when Symbol is empty.
type TickerPrice struct {
	Symbol string
}

// TickerPriceHandler answers GET /v1/ticker/price.
type TickerPriceHandler struct {
	quotes  QuoteReader
	symbols SymbolLookup
}

// NewTickerPriceHandler builds the handler.
func NewTickerPriceHandler(quotes QuoteReader, symbols SymbolLookup) (TickerPriceHandler, error) {
	if quotes == nil || symbols == nil {
		return TickerPriceHandler{}, errors.New("query: nil QuoteReader or SymbolLookup")
	}
	return TickerPriceHandler{quotes: quotes, symbols: symbols}, nil
}

// Handle returns one ticker when q.Symbol is set (-1121 if unknown, -5003 if it has no quote
// yet) or the tickers of every quoted symbol, sorted by symbol.
func (h TickerPriceHandler) Handle(ctx context.Context, q TickerPrice) ([]PriceTicker, error) {
	quotes, digits, err := selectQuotes(ctx, h.quotes, h.symbols, q.Symbol)
	if err != nil {
		return nil, err
	}
	out := make([]PriceTicker, len(quotes))
	for i, qt := range quotes {
		d := digits[i]
		out[i] = PriceTicker{Symbol: qt.Symbol, Bid: price(qt.Bid, d), Ask: price(qt.Ask, d), Last: price(qt.Last, d), Time: qt.Time}
	}
	return out, nil
}

// selectQuotes resolves the quotes (and symbol digits) a ticker request is about.
func selectQuotes(ctx context.Context, qr QuoteReader, sr SymbolLookup, symbol string) ([]Quote, []int32, error) {
	if symbol != "" {
		spec, err := lookupSymbol(ctx, sr, symbol)
		if err != nil {
			return nil, nil, err
		}
		qt, ok := qr.Quote(symbol)
		if !ok {
			return nil, nil, events.Reject(events.CodeNoPrice, "No price for the symbol.")
		}
		return []Quote{qt}, []int32{spec.Digits}, nil
	}
	all := qr.Quotes()
	sort.Slice(all, func(i, j int) bool { return all[i].Symbol < all[j].Symbol })
	quotes := all[:0]
	digits := make([]int32, 0, len(all))
	for _, qt := range all {
		d, ok, err := digitsOf(ctx, sr, qt.Symbol)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			continue // a quote for a symbol no longer listed is not shown
		}
		quotes = append(quotes, qt)
		digits = append(digits, d)
	}
	return quotes, digits, nil
}
