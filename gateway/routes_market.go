package gateway

import (
	"github.com/gofiber/fiber/v2"

	"tradesvc/query"
)

// registerMarket registers the MARKET_DATA endpoints.
func (s *Server) registerMarket(h query.Handlers) {
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/ticker/price", Security: SecMarketData, Weight: weightBySymbol(1, 2)},
		oneOrAll(h.TickerPrice))
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/ticker/bookTicker", Security: SecMarketData, Weight: weightBySymbol(1, 2)},
		oneOrAll(h.BookTicker))
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/ticker/24hr", Security: SecMarketData, Weight: weightBySymbol(1, 20)},
		oneOrAll(h.Ticker24hr))
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/klines", Security: SecMarketData, Weight: klinesWeight},
		answer(klinesQuery, h.Klines.Handle))
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/ticks", Security: SecMarketData, Weight: fixed(2)},
		answer(func(r *Request) (query.TicksQuery, error) {
			sym, err := r.Params.Required("symbol")
			if err != nil {
				return query.TicksQuery{}, err
			}
			limit, err := r.Params.OptionalIntRange("limit", 1, query.TicksMaxLimit)
			return query.TicksQuery{Symbol: sym, Limit: limit}, err
		}, h.Ticks.Handle))
}

// oneOrAll answers a market read whose symbol is optional: the object of that symbol, or the
// array of every symbol's.
func oneOrAll[S, R any](h query.SnapshotHandler[S, R]) HandlerFunc {
	return func(c *fiber.Ctx, r *Request) error {
		sym := r.Params.Optional("symbol")
		res, err := h.Handle(c.UserContext(), query.SymbolQuery{Symbol: sym})
		if err != nil {
			return err
		}
		if sym != "" {
			return c.JSON(res[0])
		}
		return c.JSON(res)
	}
}

// klinesQuery reads the klines parameters: symbol and interval mandatory (-1102), times
// integers (-1130), limit 1..1000 (-1130).
func klinesQuery(r *Request) (query.KlinesQuery, error) {
	p := r.Params
	q := query.KlinesQuery{Now: r.Now.UnixMilli()}
	var err error
	if q.Symbol, err = p.Required("symbol"); err != nil {
		return q, err
	}
	if q.Interval, err = p.Required("interval"); err != nil {
		return q, err
	}
	if q.StartTime, err = p.OptionalInt64("startTime"); err != nil {
		return q, err
	}
	if q.EndTime, err = p.OptionalInt64("endTime"); err != nil {
		return q, err
	}
	if q.Limit, err = p.OptionalIntRange("limit", 1, query.KlinesMaxLimit); err != nil {
		return q, err
	}
	return q, nil
}
