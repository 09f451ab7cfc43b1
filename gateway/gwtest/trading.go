package gwtest

import (
	"context"

	"tradesvc/events/trading"
	"tradesvc/query"
)

// Trading is an empty trading read model and deal history: the fake gateway has no orders,
// positions or deals, so its order reads answer -2013 or empty lists (real data is covered
// by the end-to-end tests).
type Trading struct{}

// Order implements query.OrderLookup.
func (Trading) Order(context.Context, int64, int64) (trading.Order, bool, error) {
	return trading.Order{}, false, nil
}

// Operation implements query.OrderLookup.
func (Trading) Operation(context.Context, string) (trading.Operation, bool, error) {
	return trading.Operation{}, false, nil
}

// OperationByClientID implements query.OrderLookup.
func (Trading) OperationByClientID(context.Context, int64, string) (trading.Operation, bool, error) {
	return trading.Operation{}, false, nil
}

// OpenOrders implements query.OpenOrderReader.
func (Trading) OpenOrders(context.Context, int64, string) ([]trading.Order, error) { return nil, nil }

// Orders implements query.OrderHistoryReader.
func (Trading) Orders(context.Context, int64, query.OrdersWindow) ([]trading.Order, error) {
	return nil, nil
}

// OpenPositions implements query.PositionLister.
func (Trading) OpenPositions(context.Context, int64, string) ([]trading.Position, error) {
	return nil, nil
}

// UserTrades implements query.DealHistoryReader.
func (Trading) UserTrades(context.Context, int64, query.TradesWindow) ([]trading.Deal, error) {
	return nil, nil
}
