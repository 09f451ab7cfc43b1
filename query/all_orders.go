package query

import (
	"context"
	"fmt"
	"tradesvc/events/trading"
)

// Limits of GET /v1/allOrders and GET /v1/userTrades.
const (
	HistoryDefaultLimit = 500
	HistoryMaxLimit     = 1000
)

// OrderHistoryReader lists a login's orders, open and done, within a window.
type OrderHistoryReader interface {
	// Orders returns the orders of window w, oldest first by setup time.
	Orders(ctx context.Context, login int64, w OrdersWindow) ([]trading.Order, error)
}

// AllOrdersQuery asks for the orders of Login. StartTime and EndTime are nil when not sent;
// Limit 0 means the default; Now is the server time the window defaults to.
type AllOrdersQuery struct {
	Login     int64
	APIKeyID  int64
	Symbol    string
	OrderID   *int64
	StartTime *int64
	EndTime   *int64
	Limit     int
	Now       int64
}

// AllOrdersHandler answers GET /v1/allOrders.
type AllOrdersHandler struct {
	withSymbols[OrderHistoryReader]
}

// Handle returns the order records of the window (HistoryWindow: -1127, -1128), terminal
// statuses included, oldest first by setup time. orderId selects ids from it on, within the
// window (the window always applies).
func (h AllOrdersHandler) Handle(ctx context.Context, q AllOrdersQuery) ([]OrderRecord, error) {
	if err := h.knownSymbol(ctx, q.Symbol); err != nil {
		return nil, err
	}
	from, to, err := HistoryWindow(q.StartTime, q.EndTime, q.Now)
	if err != nil {
		return nil, err
	}
	w := OrdersWindow{Symbol: q.Symbol, From: from, To: to, Limit: q.Limit}
	if w.Limit <= 0 {
		w.Limit = HistoryDefaultLimit
	}
	if q.OrderID != nil {
		w.FromOrderID = *q.OrderID
	}
	orders, err := h.read.Orders(ctx, q.Login, w)
	if err != nil {
		return nil, fmt.Errorf("read orders of %d: %w", q.Login, err)
	}
	return orderRecords(ctx, h.symbols, orders, q.APIKeyID)
}
