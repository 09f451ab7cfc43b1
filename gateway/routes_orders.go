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
	s.Handle(userData("/v1/order", 1), answer(func(r *Request) (query.OrderQuery, error) {
		id, err := r.Params.OptionalInt64("orderId")
		return query.OrderQuery{Login: r.Login, APIKeyID: keyID(r), OrderID: id,
			OrigClientOrderID: r.Params.Optional("origClientOrderId")}, err
	}, h.Order.Handle))
	s.Handle(userData("/v1/openOrders", 1), answer(func(r *Request) (query.OpenOrdersQuery, error) {
		return query.OpenOrdersQuery{Login: r.Login, APIKeyID: keyID(r), Symbol: r.Params.Optional("symbol")}, nil
	}, h.OpenOrders.Handle))
	s.Handle(userData("/v1/allOrders", 5), answer(func(r *Request) (query.HistoryQuery, error) {
		return historyQuery(r, "orderId")
	}, h.AllOrders.Handle))
	s.Handle(userData("/v1/positions", 1), answer(func(r *Request) (query.PositionsQuery, error) {
		return query.PositionsQuery{Login: r.Login, Symbol: r.Params.Optional("symbol")}, nil
	}, h.Positions.Handle))
	s.Handle(userData("/v1/userTrades", 5), answer(func(r *Request) (query.HistoryQuery, error) {
		return historyQuery(r, "fromId")
	}, h.UserTrades.Handle))
}

// historyQuery reads the parameters of the history endpoints: the symbol, the id they start
// from (idParam) and the times, integers (-1130), and the limit, 1..1000 (-1130; 0 when not
// sent, the handler's default).
func historyQuery(r *Request, idParam string) (q query.HistoryQuery, err error) {
	p := r.Params
	q = query.HistoryQuery{Login: r.Login, APIKeyID: keyID(r), Symbol: p.Optional("symbol"), Now: r.Now.UnixMilli()}
	if q.FromID, err = p.OptionalInt64(idParam); err != nil {
		return q, err
	}
	if q.StartTime, err = p.OptionalInt64("startTime"); err != nil {
		return q, err
	}
	if q.EndTime, err = p.OptionalInt64("endTime"); err != nil {
		return q, err
	}
	q.Limit, err = p.OptionalIntRange("limit", 1, query.HistoryMaxLimit)
	return q, err
}

// keyID is the stored id of the caller's key, which scopes client order ids (0 when the key
// store's id is not numeric: such a key owns no operation).
func keyID(r *Request) int64 {
	id, _ := strconv.ParseInt(r.Key.ID, 10, 64)
	return id
}
