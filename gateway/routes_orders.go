package gateway

import (
	"strconv"

	"github.com/gofiber/fiber/v2"

	"tradesvc/query"
)

// registerOrders registers the order, position and trade reads (USER_DATA, signed, login in
// scope). Like every account-scoped call they read the account first (RequireAccount): a login
// that is in the key's scope but nonexistent or inactive answers -2022, never an empty list or
// -2013 from which a bot would conclude that the account is flat.
func (s *Server) registerOrders(h query.Handlers) {
	userData := func(path string, weight int) Endpoint {
		return Endpoint{Method: fiber.MethodGet, Path: path, Security: SecUserData, AccountScoped: true, RequireAccount: true,
			Weight: fixed(weight)}
	}
	s.Handle(userData("/v1/order", 1), func(c *fiber.Ctx, r *Request) error {
		id, err := r.Params.OptionalInt64("orderId")
		if err != nil {
			return err
		}
		res, err := h.Order.Handle(c.UserContext(), query.OrderQuery{Login: r.Login, APIKeyID: keyID(r), OrderID: id,
			OrigClientOrderID: r.Params.Optional("origClientOrderId")})
		if err != nil {
			return err
		}
		return c.JSON(&res)
	})
	s.Handle(userData("/v1/openOrders", 1), func(c *fiber.Ctx, r *Request) error {
		res, err := h.OpenOrders.Handle(c.UserContext(), query.OpenOrdersQuery{Login: r.Login, APIKeyID: keyID(r),
			Symbol: r.Params.Optional("symbol")})
		if err != nil {
			return err
		}
		return c.JSON(res)
	})
	s.Handle(userData("/v1/allOrders", 5), func(c *fiber.Ctx, r *Request) error {
		q := query.AllOrdersQuery{Login: r.Login, APIKeyID: keyID(r), Symbol: r.Params.Optional("symbol"),
			Now: r.Now.UnixMilli()}
		var err error
		if q.OrderID, err = r.Params.OptionalInt64("orderId"); err != nil {
			return err
		}
		if q.StartTime, q.EndTime, q.Limit, err = historyParams(r.Params); err != nil {
			return err
		}
		res, err := h.AllOrders.Handle(c.UserContext(), q)
		if err != nil {
			return err
		}
		return c.JSON(res)
	})
	s.Handle(userData("/v1/positions", 1), func(c *fiber.Ctx, r *Request) error {
		res, err := h.Positions.Handle(c.UserContext(), query.PositionsQuery{Login: r.Login, Symbol: r.Params.Optional("symbol")})
		if err != nil {
			return err
		}
		return c.JSON(res)
	})
	s.Handle(userData("/v1/userTrades", 5), func(c *fiber.Ctx, r *Request) error {
		q := query.UserTradesQuery{Login: r.Login, Symbol: r.Params.Optional("symbol"), Now: r.Now.UnixMilli()}
		var err error
		if q.FromID, err = r.Params.OptionalInt64("fromId"); err != nil {
			return err
		}
		if q.StartTime, q.EndTime, q.Limit, err = historyParams(r.Params); err != nil {
			return err
		}
		res, err := h.UserTrades.Handle(c.UserContext(), q)
		if err != nil {
			return err
		}
		return c.JSON(res)
	})
}

// historyParams reads the window and limit of the history endpoints: times integers
// (-1130), limit 1..1000 (-1130; 0 when not sent, the handler's default).
func historyParams(p *Params) (start, end *int64, limit int, err error) {
	if start, err = p.OptionalInt64("startTime"); err != nil {
		return
	}
	if end, err = p.OptionalInt64("endTime"); err != nil {
		return
	}
	limit, err = p.OptionalIntRange("limit", 1, query.HistoryMaxLimit)
	return
}

// keyID is the stored id of the caller's key, which scopes client order ids (0 when the key
// store's id is not numeric: such a key owns no operation).
func keyID(r *Request) int64 {
	id, _ := strconv.ParseInt(r.Key.ID, 10, 64)
	return id
}
