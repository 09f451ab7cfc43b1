package gateway

import (
	"context"
	"strconv"

	"github.com/gofiber/fiber/v2"
)

// registerReads registers every read endpoint on the application's query handlers.
func (s *Server) registerReads() {
	s.registerGeneral(s.app.Queries)
	s.registerMarket(s.app.Queries)
	s.registerAccount(s.app.Queries)
	s.registerOrders(s.app.Queries)
	s.registerTrade()
}

// answer is a read endpoint's handler: query reads the query from the request (a malformed
// parameter is the answer), handle answers it, and its result is the JSON body.
func answer[Q, R any](query func(*Request) (Q, error), handle func(context.Context, Q) (R, error)) HandlerFunc {
	return func(c *fiber.Ctx, r *Request) error {
		q, err := query(r)
		if err != nil {
			return err
		}
		res, err := handle(c.UserContext(), q)
		if err != nil {
			return unavailable(err)
		}
		return c.JSON(&res)
	}
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
