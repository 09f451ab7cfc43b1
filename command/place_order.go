package command

import (
	"context"
	"errors"

	"tradesvc/events"
	"tradesvc/query"
)

// PlaceOrder is POST /v1/order: open a market position or place a pending order on Login.
type PlaceOrder struct {
	Caller Caller
	Login  int64
	// TradeAllowed is the account's flag (false: -2024 for a new operation).
	TradeAllowed bool
	Params       Params
}

// PlaceOrderHandler validates, records and queues new orders.
type PlaceOrderHandler struct {
	core core
	v    *Validator
}

// NewPlaceOrderHandler builds the handler.
func NewPlaceOrderHandler(s Shared, v *Validator) (PlaceOrderHandler, error) {
	c, err := newCore(s)
	if err != nil {
		return PlaceOrderHandler{}, err
	}
	if v == nil {
		return PlaceOrderHandler{}, errors.New("command: place order needs a validator")
	}
	return PlaceOrderHandler{core: c, v: v}, nil
}

// Handle answers a new order with its queued view, or a retry from its record.
func (h PlaceOrderHandler) Handle(ctx context.Context, cmd PlaceOrder) (Result, error) {
	p := cmd.Params
	coid, given, err := clientOrderID(p, "newClientOrderId")
	if err != nil {
		return Result{}, err
	}
	rt, err := respType(p)
	if err != nil {
		return h.core.refused(ctx, h.v.symbols, cmd.Caller, coid, given, query.KindPlaceOrder, cmd.Login, RespACK, err)
	}
	o, err := h.v.Order(ctx, p, h.core.now())
	if err == nil && !cmd.TradeAllowed {
		err = errAccountTradeOff
	}
	if err != nil {
		return h.core.refused(ctx, h.v.symbols, cmd.Caller, coid, given, query.KindPlaceOrder, cmd.Login, rt, err)
	}
	head, err := h.core.header(ctx, cmd.Caller, cmd.Login, coid)
	if err != nil {
		return Result{}, err
	}
	ev := orderEvent(head, o)
	rec, created, err := h.core.submit(ctx, newOperation{caller: cmd.Caller, coid: coid, kind: query.KindPlaceOrder,
		login: cmd.Login, id: ev.OperationID, tag: ev.Tag, evs: []events.Event{ev}})
	if err != nil {
		return Result{}, err
	}
	if !created {
		return h.core.answer(ctx, h.v.symbols, rec, query.KindPlaceOrder, cmd.Login, rt)
	}
	op := operationOf(ev)
	return Result{Op: op, Queued: op.Status, Digits: o.spec.Digits, RespType: rt}, nil
}

// orderEvent is the OrderRequested_v1 of a validated order.
func orderEvent(head events.Operation, o order) *events.OrderRequested {
	return &events.OrderRequested{Operation: head,
		Symbol: o.Symbol, Side: o.Side, Type: o.Type, Volume: o.Volume, Price: o.Price, StopLimitPrice: o.StopLimitPrice,
		SL: o.SL, TP: o.TP, TimeInForce: o.TimeInForce, Expiration: o.Expiration, Comment: o.Comment,
		QuotedPrice: o.QuotedPrice}
}
