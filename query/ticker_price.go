package query

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

// TickerPriceHandler answers GET /v1/ticker/price.
type TickerPriceHandler = SnapshotHandler[Quote, PriceTicker]

// NewTickerPriceHandler builds the handler.
func NewTickerPriceHandler(quotes QuoteReader, symbols SymbolLookup) (TickerPriceHandler, error) {
	return quoteSnapshots(quotes, symbols, toPriceTicker)
}

func toPriceTicker(q Quote, d int32) PriceTicker {
	return PriceTicker{Symbol: q.Symbol, Bid: price(q.Bid, d), Ask: price(q.Ask, d), Last: price(q.Last, d), Time: q.Time}
}
