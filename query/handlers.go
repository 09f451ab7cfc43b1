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
	Accounts     AccountsHandler
	Operation    OperationAwaiter
}

// NewHandlers builds every query handler over r; it reports every missing reader at once.
func NewHandlers(r Readers) (Handlers, error) {
	var h Handlers
	var errs [9]error
	h.ExchangeInfo, errs[0] = NewExchangeInfoHandler(r.Symbols, r.Server)
	h.TickerPrice, errs[1] = NewTickerPriceHandler(r.Quotes, r.Symbols)
	h.BookTicker, errs[2] = NewBookTickerHandler(r.Quotes, r.Symbols)
	h.Ticker24hr, errs[3] = NewTicker24hrHandler(r.DayStats, r.Symbols)
	h.Klines, errs[4] = NewKlinesHandler(r.Bars, r.Symbols)
	h.Ticks, errs[5] = NewTicksHandler(r.Quotes, r.Symbols)
	h.Account, errs[6] = NewAccountHandler(r.Accounts)
	h.Accounts, errs[7] = NewAccountsHandler(r.Accounts)
	if r.Operations != nil || r.OperationChanges != nil { // TODO(lead): required once the trading readers are wired
		h.Operation, errs[8] = NewOperationAwaiter(r.Operations, r.OperationChanges)
	}
	return h, errors.Join(errs[:]...)
}
