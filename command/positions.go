package command

import (
	"context"
	"fmt"

	"tradesvc/events"
	"tradesvc/query"
)

// Position lookups shared by DELETE and PUT /v1/position.

var (
	errNoPosition     = events.Reject(events.CodeNoSuchPosition, "Position does not exist.")
	errPositionClosed = events.Reject(events.CodePositionClosed, "Position already closed.")
)

// openPosition reads positionId and finds it among the login's positions: -1102/-1130 for
// the parameter, -2023 when the login has no such position, -5006 when it is closed.
func openPosition(ctx context.Context, positions PositionReader, p Params, login int64) (query.Position, error) {
	id, err := ticketParam(p, "positionId")
	if err != nil {
		return query.Position{}, err
	}
	pos, ok, err := positions.Position(ctx, login, id)
	if err != nil {
		return query.Position{}, fmt.Errorf("read position %d: %w", id, err)
	}
	if !ok {
		return query.Position{}, errNoPosition
	}
	if !pos.Open {
		return query.Position{}, errPositionClosed
	}
	return pos, nil
}

// positionSide is a position's direction as a side.
func positionSide(pos query.Position) string {
	if pos.Direction == 0 {
		return SideBuy
	}
	return SideSell
}

// closingSide is the side of the deal that closes pos.
func closingSide(pos query.Position) string {
	if pos.Direction == 0 {
		return SideSell
	}
	return SideBuy
}
