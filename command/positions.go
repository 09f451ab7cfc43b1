package command

import (
	"context"
	"fmt"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// Position lookups shared by DELETE and PUT /v1/position.

var (
	errNoPosition     = events.Reject(events.CodeNoSuchPosition, "Position does not exist.")
	errPositionClosed = events.Reject(events.CodePositionClosed, "Position already closed.")
)

// openPosition finds position id among the login's positions: -2023 when the login has no
// such position, -5006 when it is closed.
func openPosition(ctx context.Context, positions PositionReader, login, id int64) (trading.Position, error) {
	pos, ok, err := positions.Position(ctx, login, id)
	if err != nil {
		return trading.Position{}, fmt.Errorf("read position %d: %w", id, err)
	}
	if !ok {
		return trading.Position{}, errNoPosition
	}
	if !pos.Open {
		return trading.Position{}, errPositionClosed
	}
	return pos, nil
}
