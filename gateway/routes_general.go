package gateway

import (
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"tradesvc/events"
	"tradesvc/query"
)

// registerGeneral registers ping, time and exchangeInfo (security NONE).
func (s *Server) registerGeneral(h query.Handlers) {
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/ping", Security: SecNone}, func(c *fiber.Ctx, _ *Request) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.SendString("{}")
	})
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/time", Security: SecNone}, func(c *fiber.Ctx, r *Request) error {
		return c.JSON(struct {
			ServerTime int64 `json:"serverTime"`
		}{r.Now.UnixMilli()})
	})
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/exchangeInfo", Security: SecNone, Weight: fixed(10)},
		answer(func(r *Request) (query.ExchangeInfoQuery, error) {
			names, err := exchangeInfoSymbols(r.Params)
			lim := s.cfg.Limits
			if r.auth != nil {
				lim = r.auth.limits.Or(s.cfg.Limits)
			}
			return query.ExchangeInfoQuery{
				Symbols: names, Now: r.Now.UnixMilli(),
				RateLimits: []query.RateLimit{
					{RateLimitType: "REQUEST_WEIGHT", Interval: "MINUTE", IntervalNum: 1, Limit: lim.WeightPerMinute},
					{RateLimitType: "ORDERS", Interval: "SECOND", IntervalNum: 10, Limit: lim.Orders10s},
					{RateLimitType: "ORDERS", Interval: "MINUTE", IntervalNum: 1, Limit: lim.Orders1m},
				},
			}, err
		}, h.ExchangeInfo.Handle))
}

// exchangeInfoSymbols reads symbol / symbols: sending both is -1128 (an invalid combination
// of optional parameters); symbols must be a JSON array of 1 or more strings (-1130).
func exchangeInfoSymbols(p *Params) ([]string, error) {
	one, many := p.Optional("symbol"), p.Optional("symbols")
	switch {
	case one != "" && many != "":
		return nil, events.Reject(events.CodeBadCombination, "Parameters 'symbol' and 'symbols' cannot be sent together.")
	case one != "":
		return []string{one}, nil
	case many != "":
		var names []string
		if err := json.Unmarshal([]byte(many), &names); err != nil || len(names) == 0 {
			return nil, events.Reject(events.CodeInvalidData, "Parameter 'symbols' must be a JSON array of symbol names.")
		}
		for _, n := range names {
			if n == "" {
				return nil, events.Reject(events.CodeInvalidSymbol, "Invalid symbol.")
			}
		}
		return names, nil
	}
	return nil, nil
}
