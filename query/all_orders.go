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

// AllOrdersHandler answers GET /v1/allOrders.
type AllOrdersHandler struct {
	withSymbols[OrderHistoryReader]
}

// Handle returns the order records of the window (HistoryWindow: -1127, -1128), terminal
// statuses included, oldest first by setup time. orderId selects ids from it on, within the
// window (the window always applies).
func (h AllOrdersHandler) Handle(ctx context.Context, q HistoryQuery) ([]OrderRecord, error) {
	if err := h.knownSymbol(ctx, q.Symbol); err != nil {
		return nil, err
	}
	from, to, err := HistoryWindow(q.StartTime, q.EndTime, q.Now)
	if err != nil {
		return nil, err
	}
	w := OrdersWindow{Symbol: q.Symbol, From: from, To: to, Limit: q.limit()}
	if q.FromID != nil {
		w.FromOrderID = *q.FromID
	}
	orders, err := h.read.Orders(ctx, q.Login, w)
	if err != nil {
		return nil, fmt.Errorf("read orders of %d: %w", q.Login, err)
	}
	return orderRecords(ctx, h.symbols, orders, q.APIKeyID)
}
