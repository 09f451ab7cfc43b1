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
	coid, given, err := clientOrderID(cmd.Params, "newClientOrderId")
	if err != nil {
		return Result{}, err
	}
	o, orig, err := pendingOrder(ctx, h.core, h.orders, cmd.Params, cmd.Caller, cmd.Login)
	if err == nil && !cmd.TradeAllowed {
		err = errAccountTradeOff
	}
	if err != nil {
		return h.core.refused(ctx, h.v.symbols, cmd.Caller, coid, given, query.KindCancelOrder, cmd.Login, RespRESULT, err)
	}
	head, err := h.core.header(ctx, cmd.Caller, cmd.Login, coid)
	if err != nil {
		return Result{}, err
	}
	ev := &events.OrderCancelRequested{Operation: head,
		OrderID: o.OrderID, Symbol: o.Symbol, Side: orderSide(o), Type: typeName(o.Type)}
	rec, created, err := h.core.submit(ctx, newOperation{caller: cmd.Caller, coid: coid, kind: query.KindCancelOrder,
		login: cmd.Login, id: ev.OperationID, tag: ev.Tag, evs: []events.Event{ev}})
	if err != nil {
		return Result{}, err
	}
	if !created {
		return h.core.answer(ctx, h.v.symbols, rec, query.KindCancelOrder, cmd.Login, RespRESULT)
	}
	op := operationOf(ev)
	op.Volume = &o.VolumeCurrent
	res := Result{Op: op, Queued: op.Status, RespType: RespRESULT, OrigClientOrderID: orig}
	if spec, ok, err := h.v.symbols.Symbol(ctx, o.Symbol); err == nil && ok {
		res.Digits = spec.Digits
	}
	return res, nil
}
