package query

import (
	"context"
	"errors"
	"fmt"
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
type OpenOrdersHandler struct {
	orders  OpenOrderReader
	symbols SymbolLookup
}

// NewOpenOrdersHandler builds the handler.
func NewOpenOrdersHandler(orders OpenOrderReader, symbols SymbolLookup) (OpenOrdersHandler, error) {
	if orders == nil || symbols == nil {
		return OpenOrdersHandler{}, errors.New("query: nil OpenOrderReader or SymbolLookup")
	}
	return OpenOrdersHandler{orders: orders, symbols: symbols}, nil
}

// Handle returns the order records, ordered by order id; an unknown symbol is -1121.
func (h OpenOrdersHandler) Handle(ctx context.Context, q OpenOrdersQuery) ([]OrderRecord, error) {
	if q.Symbol != "" {
		if _, err := lookupSymbol(ctx, h.symbols, q.Symbol); err != nil {
			return nil, err
		}
	}
	orders, err := h.orders.OpenOrders(ctx, q.Login, q.Symbol)
	if err != nil {
		return nil, fmt.Errorf("read open orders of %d: %w", q.Login, err)
	}
	return orderRecords(ctx, h.symbols, orders, q.APIKeyID)
}

// orderRecords renders orders with their symbols' digits (looked up once per symbol).
func orderRecords(ctx context.Context, symbols SymbolLookup, orders []trading.Order, apiKeyID int64) ([]OrderRecord, error) {
	out := make([]OrderRecord, 0, len(orders))
	digits := map[string]symbolDigits{}
	for _, o := range orders {
		sd, seen := digits[o.Symbol]
		if !seen {
			d, ok, err := digitsOf(ctx, symbols, o.Symbol)
			if err != nil {
				return nil, err
			}
			sd = symbolDigits{digits: d, known: ok}
			digits[o.Symbol] = sd
		}
		out = append(out, orderRecord(o, apiKeyID, sd))
	}
	return out, nil
}
