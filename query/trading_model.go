package query

// Trading read models (Postgres, built by projection.trading; see
// infra/postgres/migrations/0102_trading_read_models.sql) are the domain's models
// (events/trading: Operation, Order, Position, Deal); this file holds the query windows.

// OrdersWindow selects the orders of GET /v1/allOrders: setup time in [From, To] (inclusive,
// Unix ms), of one symbol when Symbol is set, with an id of at least FromOrderID (0: any), the
// oldest Limit by setup time.
type OrdersWindow struct {
	Symbol      string
	FromOrderID int64
	From, To    int64
	Limit       int
}

// TradesWindow selects the deals of GET /v1/userTrades: deal time in [From, To], or, when
// FromID is set, every deal with an id of at least *FromID whatever its time; of one symbol
// when Symbol is set; the first Limit by deal id.
type TradesWindow struct {
	Symbol   string
	FromID   *int64
	From, To int64
	Limit    int
}
