package query

// BookTickerHandler answers GET /v1/ticker/bookTicker: the price ticker's data in the
// book-ticker shape.
type BookTickerHandler = SnapshotHandler[Quote, BookTicker]

// NewBookTickerHandler builds the handler.
func NewBookTickerHandler(quotes QuoteReader, symbols SymbolLookup) (BookTickerHandler, error) {
	return quoteSnapshots(quotes, symbols, toBookTicker)
}

// toBookTicker leaves the quantities "0": the trade server publishes no depth.
func toBookTicker(q Quote, d int32) BookTicker {
	return BookTicker{Symbol: q.Symbol, BidPrice: price(q.Bid, d), BidQty: "0", AskPrice: price(q.Ask, d), AskQty: "0", Time: q.Time}
}
