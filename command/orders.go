package command

import (
	"context"
	"fmt"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// Pending-order lookups shared by PUT and DELETE /v1/order.

var errNoOrder = events.Reject(events.CodeNoSuchOrder, "Order does not exist.")

// pendingOrder finds the login's resting order ref names: no such pending order of the login
// is -2013. origClientOrderId resolves through the caller's idempotency record of the
// placement and the order id its outcome carried (with no in-band answer there is none:
// -2013). It also returns the client order id of the order when the caller's key placed it.
func (c *core) pendingOrder(ctx context.Context, orders OrderReader, ref OrderRef, b Base) (trading.Order, string, error) {
	orig := ref.OrigClientOrderID
	id := ref.OrderID
	if id == nil {
		rec, ok, err := c.records.Get(ctx, b.Caller.APIKeyID, orig)
		if err != nil {
			return trading.Order{}, "", err
		}
		if !ok || rec.Kind != trading.KindPlaceOrder || rec.Login != b.Login {
			return trading.Order{}, "", errNoOrder
		}
		op, ok, err := c.ops.Operation(ctx, rec.OperationID)
		if err != nil {
			return trading.Order{}, "", fmt.Errorf("read operation %s: %w", rec.OperationID, err)
		}
		if !ok || op.OrderID == 0 {
			return trading.Order{}, "", errNoOrder
		}
		id = &op.OrderID
	}
	o, ok, err := orders.Order(ctx, b.Login, *id)
	if err != nil {
		return trading.Order{}, "", fmt.Errorf("read order %d: %w", *id, err)
	}
	if !ok || !o.Open || !o.Type.IsPending() {
		return trading.Order{}, "", errNoOrder
	}
	if orig == "" && o.APIKeyID == b.Caller.APIKeyID {
		orig = o.ClientOrderID
	}
	return o, orig, nil
}
