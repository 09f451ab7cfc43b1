package query

import (
	"context"
	"errors"
)

// BookTickerQuery asks for the book ticker of one symbol, or of all when Symbol is empty.
type BookTickerQuery struct {
	Symbol string
}

// BookTickerHandler answers GET /v1/ticker/bookTicker: the price ticker's data in the
// book-ticker shape, quantities always "0" (the trade server publishes no depth).
type BookTickerHandler struct {
	quotes  QuoteReader
	symbols SymbolLookup
}

// NewBookTickerHandler builds the handler.
func NewBookTickerHandler(quotes QuoteReader, symbols SymbolLookup) (BookTickerHandler, error) {
	if quotes == nil || symbols == nil {
		return BookTickerHandler{}, errors.New("query: nil QuoteReader or SymbolLookup")
	}
	return BookTickerHandler{quotes: quotes, symbols: symbols}, nil
}

// Handle mirrors TickerPriceHandler.Handle.
func (h BookTickerHandler) Handle(ctx context.Context, q BookTickerQuery) ([]BookTicker, error) {
	quotes, digits, err := selectQuotes(ctx, h.quotes, h.symbols, q.Symbol)
	if err != nil {
		return nil, err
	}
	out := make([]BookTicker, len(quotes))
	for i, qt := range quotes {
		d := digits[i]
		out[i] = BookTicker{Symbol: qt.Symbol, BidPrice: price(qt.Bid, d), BidQty: "0", AskPrice: price(qt.Ask, d), AskQty: "0", Time: qt.Time}
	}
	return out, nil
}
