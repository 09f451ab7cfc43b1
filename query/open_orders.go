package query

import (
	"context"
	"tradesvc/events/trading"
)

// OpenOrderReader lists a login's pending orders.
type OpenOrderReader interface {
	// OpenOrders returns the login's pending orders (of one symbol when symbol is not empty),
	// ordered by order id.
	OpenOrders(ctx context.Context, login int64, symbol string) ([]trading.Order, error)
}

// OpenOrdersQuery asks for the pending orders of Login, of Symbol when it is set. APIKeyID
// is the caller's key: clientOrderId is shown only on its own orders.
type OpenOrdersQuery struct {
	Login    int64
	APIKeyID int64
	Symbol   string
}

// OpenOrdersHandler answers GET /v1/openOrders.
type OpenOrdersHandler struct{ withSymbols[OpenOrderReader] }

// Handle returns the order records, ordered by order id; an unknown symbol is -1121.
func (h OpenOrdersHandler) Handle(ctx context.Context, q OpenOrdersQuery) ([]OrderRecord, error) {
	orders, err := openOf(ctx, h.withSymbols, q.Login, q.Symbol, "open orders", h.read.OpenOrders)
	if err != nil {
		return nil, err
	}
	return orderRecords(ctx, h.symbols, orders, q.APIKeyID)
}

// orderRecords renders orders with their symbols' digits.
func orderRecords(ctx context.Context, symbols SymbolLookup, orders []trading.Order, apiKeyID int64) ([]OrderRecord, error) {
	return renderWithSpecs(ctx, symbols, orders, func(o trading.Order) string { return o.Symbol },
		func(o trading.Order, s symbolSpec) OrderRecord { return orderRecord(o, apiKeyID, s.digits()) })
}
