package command

import (
	"context"
	"fmt"
	"strconv"

	"tradesvc/events"
	"tradesvc/query"
)

// Pending-order lookups shared by PUT and DELETE /v1/order.

var errNoOrder = events.Reject(events.CodeNoSuchOrder, "Order does not exist.")

// platformTypes names the platform's order types 0..8 as the spec does.
var platformTypes = []string{"BUY", "SELL", "BUY_LIMIT", "SELL_LIMIT", "BUY_STOP", "SELL_STOP", "BUY_STOP_LIMIT",
	"SELL_STOP_LIMIT", "CLOSE_BY"}

func typeName(t int) string {
	if t >= 0 && t < len(platformTypes) {
		return platformTypes[t]
	}
	return "UNKNOWN_" + strconv.Itoa(t)
}

// platformTimes names the platform's time types 0..3 (timeInForce).
var platformTimes = []string{"GTC", "DAY", "GTD", "GTD_DAY"}

func tifName(t int) string {
	if t >= 0 && t < len(platformTimes) {
		return platformTimes[t]
	}
	return "GTC"
}

// pendingOrder finds the login's resting order named by orderId or origClientOrderId:
// neither sent -1102; a malformed orderId -1130; no such pending order of the login -2013.
// origClientOrderId resolves through the caller's idempotency record of the placement and
// the order id its outcome carried (with no in-band answer there is none: -2013).
func pendingOrder(ctx context.Context, c core, orders OrderReader, p Params, caller Caller, login int64) (query.Order, string, error) {
	id, err := int64Param(p, "orderId")
	if err != nil {
		return query.Order{}, "", err
	}
	orig, byClient := optional(p, "origClientOrderId")
	switch {
	case id == nil && !byClient:
		return query.Order{}, "", events.Reject(events.CodeMandatoryParam,
			"Mandatory parameter 'orderId' or 'origClientOrderId' was not sent, was empty/null, or malformed.")
	case id == nil:
		rec, ok, err := c.records.Get(ctx, caller.APIKeyID, orig)
		if err != nil {
			return query.Order{}, "", err
		}
		if !ok || rec.Kind != query.KindPlaceOrder || rec.Login != login {
			return query.Order{}, "", errNoOrder
		}
		op, ok, err := c.ops.Operation(ctx, rec.OperationID)
		if err != nil {
			return query.Order{}, "", fmt.Errorf("read operation %s: %w", rec.OperationID, err)
		}
		if !ok || op.OrderID == 0 {
			return query.Order{}, "", errNoOrder
		}
		id = &op.OrderID
	}
	o, ok, err := orders.Order(ctx, login, *id)
	if err != nil {
		return query.Order{}, "", fmt.Errorf("read order %d: %w", *id, err)
	}
	if !ok || !o.Open || o.Type < 2 || o.Type > 7 {
		return query.Order{}, "", errNoOrder
	}
	if orig == "" && o.APIKeyID == caller.APIKeyID {
		orig = o.ClientOrderID
	}
	return o, orig, nil
}

// orderSide is the side a pending order's type implies.
func orderSide(o query.Order) string {
	if o.Type%2 == 0 {
		return SideBuy
	}
	return SideSell
}
