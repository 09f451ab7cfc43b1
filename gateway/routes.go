package gateway

import (
	"errors"
	"strconv"

	"tradesvc/query"
)

// readHandlers are the query handlers behind the read endpoints.
type readHandlers struct {
	exchangeInfo query.ExchangeInfoHandler
	price        query.TickerPriceHandler
	book         query.BookTickerHandler
	day          query.Ticker24hrHandler
	klines       query.KlinesHandler
	ticks        query.TicksHandler
	account      query.AccountHandler
	accounts     query.AccountsHandler
}

// registerReads builds the query handlers and registers every read endpoint.
func (s *Server) registerReads() error {
	var h readHandlers
	var errs [8]error
	h.exchangeInfo, errs[0] = query.NewExchangeInfoHandler(s.deps.Symbols, s.deps.Server)
	h.price, errs[1] = query.NewTickerPriceHandler(s.deps.Quotes, s.deps.Symbols)
	h.book, errs[2] = query.NewBookTickerHandler(s.deps.Quotes, s.deps.Symbols)
	h.day, errs[3] = query.NewTicker24hrHandler(s.deps.DayStats, s.deps.Symbols)
	h.klines, errs[4] = query.NewKlinesHandler(s.deps.Bars, s.deps.Symbols)
	h.ticks, errs[5] = query.NewTicksHandler(s.deps.Quotes, s.deps.Symbols)
	h.account, errs[6] = query.NewAccountHandler(s.deps.Accounts)
	h.accounts, errs[7] = query.NewAccountsHandler(s.deps.Accounts)
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	s.registerGeneral(h)
	s.registerMarket(h)
	s.registerAccount(h)
	return nil
}

// weightBySymbol is the weight of the ticker endpoints: one value with symbol, another without.
func weightBySymbol(with, without int) func(*Params) int {
	return func(p *Params) int {
		if p.Optional("symbol") != "" {
			return with
		}
		return without
	}
}

// klinesWeight: 1 for limit up to 100, 2 up to 500 (and the default 500), 5 above; an
// unparseable limit (answered -1130) is charged as the largest request.
func klinesWeight(p *Params) int {
	v := p.Optional("limit")
	if v == "" {
		return 2
	}
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return 5
	case n <= 100:
		return 1
	case n <= 500:
		return 2
	}
	return 5
}

func fixed(n int) func(*Params) int { return func(*Params) int { return n } }
