package command

import (
	"context"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// CancelOrderHandler records and queues cancels.
type CancelOrderHandler struct {
	core   *core
	orders OrderReader
}

// Handle finds the order (-2013) and queues its cancel.
func (h CancelOrderHandler) Handle(ctx context.Context, cmd CancelOrder) (Result, error) {
	return h.core.one(ctx, cmd.Base, trading.KindCancelOrder, func() (prepared, error) {
		o, orig, err := h.core.pendingOrder(ctx, h.orders, cmd.Target, cmd.Base)
		head, err := h.core.headed(ctx, cmd.Base, err)
		if err != nil {
			return prepared{}, err
		}
		ev := &events.OrderCancelRequested{Operation: head, OrderID: o.OrderID, Symbol: o.Symbol,
			Side: o.Type.Side().String(), Type: o.Type.String()}
		return prepared{base: cmd.Base, kind: trading.KindCancelOrder, evs: []events.Command{ev},
			digits: h.core.digits(ctx, o.Symbol), adjust: func(r *Result) {
				r.Op.Volume, r.OrigClientOrderID = &o.VolumeCurrent, orig
			}}, nil
	})
}
