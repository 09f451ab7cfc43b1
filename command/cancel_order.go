package command

import (
	"context"
	"errors"

	"tradesvc/events"
	"tradesvc/query"
)

// CancelOrder is DELETE /v1/order: remove a pending order.
type CancelOrder struct {
	Caller       Caller
	Login        int64
	TradeAllowed bool
	Params       Params
}

// CancelOrderHandler records and queues cancels.
type CancelOrderHandler struct {
	core   core
	v      *Validator
	orders OrderReader
}

// NewCancelOrderHandler builds the handler.
func NewCancelOrderHandler(s Shared, v *Validator, orders OrderReader) (CancelOrderHandler, error) {
	c, err := newCore(s)
	if err != nil {
		return CancelOrderHandler{}, err
	}
	if v == nil || orders == nil {
		return CancelOrderHandler{}, errors.New("command: cancel order needs a validator and the orders read model")
	}
	return CancelOrderHandler{core: c, v: v, orders: orders}, nil
}

// Handle finds the order (-2013) and queues its cancel.
func (h CancelOrderHandler) Handle(ctx context.Context, cmd CancelOrder) (Result, error) {
	return h.core.handle(ctx, h.v.symbols, cmd.Caller, cmd.Login, cmd.Params, query.KindCancelOrder, false,
		func(coid string) (prepared, error) {
			o, orig, err := pendingOrder(ctx, h.core, h.orders, cmd.Params, cmd.Caller, cmd.Login)
			if err == nil && !cmd.TradeAllowed {
				err = errAccountTradeOff
			}
			if err != nil {
				return prepared{}, err
			}
			head, err := h.core.header(ctx, cmd.Caller, cmd.Login, coid)
			if err != nil {
				return prepared{}, err
			}
			spec, _, err := h.v.symbols.Symbol(ctx, o.Symbol)
			if err != nil {
				return prepared{}, err
			}
			ev := &events.OrderCancelRequested{Operation: head, OrderID: o.OrderID, Symbol: o.Symbol, Side: orderSide(o),
				Type: typeName(o.Type)}
			return prepared{ev: ev, digits: spec.Digits, adjust: func(r *Result) {
				r.Op.Volume, r.OrigClientOrderID = &o.VolumeCurrent, orig
			}}, nil
		})
}
