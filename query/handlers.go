package query

import "errors"

// Readers are the read models the query handlers read: Postgres, ClickHouse and the
// in-memory market projection, each behind the narrow interface its handlers declare.
type Readers struct {
	Symbols  SymbolReader
	Quotes   QuoteReader
	DayStats DayStatsReader
	Bars     BarReader
	Accounts AccountReader
	Server   ServerInfo
	// Operations and OperationChanges serve the waits of the trading endpoints.
	Operations       OperationReader
	OperationChanges OperationWatcher
	// Trading serves the order and position reads (projection.trading), Deals the trade
	// history (ClickHouse).
	Trading TradingReader
	Deals   DealHistoryReader
}

// TradingReader is the trading read model behind the order and position reads.
type TradingReader interface {
	OrderLookup
	OpenOrderReader
	OrderHistoryReader
	PositionLister
}

// Handlers are every query handler of the service (the Queries half of the application).
type Handlers struct {
	ExchangeInfo ExchangeInfoHandler
	TickerPrice  TickerPriceHandler
	BookTicker   BookTickerHandler
	Ticker24hr   Ticker24hrHandler
	Klines       KlinesHandler
	Ticks        TicksHandler
	Account      AccountHandler
	Operation    OperationAwaiter
	Order        OrderHandler
	OpenOrders   OpenOrdersHandler
	AllOrders    AllOrdersHandler
	Positions    PositionsHandler
	UserTrades   UserTradesHandler
}

// NewHandlers builds every query handler over r; it reports every missing reader at once.
func NewHandlers(r Readers) (Handlers, error) {
	var h Handlers
	var errs [13]error
	h.ExchangeInfo, errs[0] = NewExchangeInfoHandler(r.Symbols, r.Server)
	h.TickerPrice, errs[1] = NewTickerPriceHandler(r.Quotes, r.Symbols)
	h.BookTicker, errs[2] = NewBookTickerHandler(r.Quotes, r.Symbols)
	h.Ticker24hr, errs[3] = NewTicker24hrHandler(r.DayStats, r.Symbols)
	h.Klines, errs[4] = NewSymbolsHandler[KlinesHandler, BarReader](r.Bars, r.Symbols)
	h.Ticks, errs[5] = NewSymbolsHandler[TicksHandler, QuoteReader](r.Quotes, r.Symbols)
	h.Account, errs[6] = NewAccountHandler(r.Accounts)
	h.Operation, errs[7] = NewOperationAwaiter(r.Operations, r.OperationChanges)
	h.Order, errs[8] = NewSymbolsHandler[OrderHandler, OrderLookup](r.Trading, r.Symbols)
	h.OpenOrders, errs[9] = NewSymbolsHandler[OpenOrdersHandler, OpenOrderReader](r.Trading, r.Symbols)
	h.AllOrders, errs[10] = NewSymbolsHandler[AllOrdersHandler, OrderHistoryReader](r.Trading, r.Symbols)
	h.Positions, errs[11] = NewPositionsHandler(r.Trading, r.Symbols, r.Quotes, r.Accounts)
	h.UserTrades, errs[12] = NewSymbolsHandler[UserTradesHandler, DealHistoryReader](r.Deals, r.Symbols)
	return h, errors.Join(errs[:]...)
}
