package command

import (
	"context"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/query"
)

// The read models the command handlers validate against. They are projections (the write
// side never asks the trade server): symbol specifications and quotes from memory, orders,
// positions and operations from Postgres.

// SymbolReader finds a symbol specification by its exact name.
type SymbolReader interface {
	Symbol(ctx context.Context, name string) (trading.SymbolSpec, bool, error)
}

// QuoteReader returns the latest quote of a symbol from the in-memory market projection.
type QuoteReader interface {
	Quote(symbol string) (query.Quote, bool)
}

// OperationReader reads rm.operations.
type OperationReader interface {
	// Operation returns the operation with the given id; ok is false when the read model
	// does not know it (yet).
	Operation(ctx context.Context, operationID string) (trading.Operation, bool, error)
	// SweepLegs returns the close operations of a sweep, in any order.
	SweepLegs(ctx context.Context, sweepID string) ([]trading.Operation, error)
}

// OrderReader reads rm.orders.
type OrderReader interface {
	// Order returns order orderID of login, open or done; ok is false when the login has no
	// such order.
	Order(ctx context.Context, login, orderID int64) (trading.Order, bool, error)
}

// PositionReader reads rm.positions.
type PositionReader interface {
	// Position returns position positionID of login, open or closed; ok is false when the
	// login has no such position.
	Position(ctx context.Context, login, positionID int64) (trading.Position, bool, error)
	// OpenPositions returns the login's open positions (of one symbol when symbol is not
	// empty), ordered by position id.
	OpenPositions(ctx context.Context, login int64, symbol string) ([]trading.Position, error)
}

// Appender appends command events to the log durably before it returns.
type Appender interface {
	Wrap(evs ...events.Event) ([]events.Envelope, error)
	AppendEnvelopes(ctx context.Context, topic events.Topic, envs ...events.Envelope) error
}
