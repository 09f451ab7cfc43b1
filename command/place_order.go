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
	return h.core.handle(ctx, h.v.symbols, cmd.Caller, cmd.Login, cmd.Params, query.KindPlaceOrder, true,
		func(coid string) (prepared, error) {
			o, err := h.v.Order(ctx, cmd.Params, h.core.now())
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
			return prepared{ev: orderEvent(head, o), digits: o.spec.Digits}, nil
		})
}

// orderEvent is the OrderRequested_v1 of a validated order.
func orderEvent(head events.Operation, o order) *events.OrderRequested {
	ev := &events.OrderRequested{Operation: head,
		Symbol: o.Symbol, Side: o.Side, Type: o.Type, Volume: o.Volume, Price: o.Price, StopLimitPrice: o.StopLimitPrice,
		SL: o.SL, TP: o.TP, TimeInForce: o.TimeInForce, Expiration: o.Expiration, Comment: o.Comment,
		QuotedPrice: o.QuotedPrice}
	if q := o.Quote; q != nil {
		bid, ask := q.Bid, q.Ask
		ev.QuoteBid, ev.QuoteAsk, ev.QuoteTime = &bid, &ask, q.Time
	}
	return ev
}
