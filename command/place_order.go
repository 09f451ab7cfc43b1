package command

import (
	"context"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// PlaceOrderHandler validates, records and queues new orders: one at a time (POST /v1/order)
// or several in one statement and one append (the items of POST /v1/batchOrders), on the same
// path.
type PlaceOrderHandler struct {
	core *core
	v    *Validator
}

// Handle answers a new order with its queued view, or a retry from its record.
func (h PlaceOrderHandler) Handle(ctx context.Context, cmd PlaceOrder) (Result, error) {
	out := h.HandleBatch(ctx, []PlaceOrder{cmd})
	return out[0].Result, out[0].Err
}

// HandleBatch handles several orders at once: each is validated on its own (a refusal is
// answered from its record when it has one), the valid ones are recorded in one statement
// and queued in one append. The answers are in the order of cmds.
func (h PlaceOrderHandler) HandleBatch(ctx context.Context, cmds []PlaceOrder) []Outcome {
	out := make([]Outcome, len(cmds))
	var ps []prepared
	var slots []int
	for i, cmd := range cmds {
		p, err := h.prepare(ctx, cmd)
		if err != nil {
			out[i].Result, out[i].Err = h.core.refused(ctx, cmd.Base, trading.KindPlaceOrder, err)
			continue
		}
		ps, slots = append(ps, p), append(slots, i)
	}
	for j, o := range h.core.submit(ctx, ps) {
		out[slots[j]] = o
	}
	return out
}

func (h PlaceOrderHandler) prepare(ctx context.Context, cmd PlaceOrder) (prepared, error) {
	o, err := h.v.Order(ctx, cmd.Order, h.core.now())
	head, err := h.core.headed(ctx, cmd.Base, err)
	if err != nil {
		return prepared{}, err
	}
	return prepared{base: cmd.Base, kind: trading.KindPlaceOrder, evs: []events.Command{orderEvent(head, o)},
		digits: o.spec.Digits}, nil
}

// orderEvent is the OrderRequested_v1 of a validated order.
func orderEvent(head events.Operation, o order) *events.OrderRequested {
	r := o.OrderRequest
	ev := &events.OrderRequested{Operation: head, Symbol: r.Symbol, Side: r.Type.Side().String(),
		Type: r.Type.RecordName(), Volume: r.Volume, Comment: r.Comment, QuotedPrice: o.QuotedPrice,
		OrderPrices: events.OrderPrices{Price: r.Price, StopLimitPrice: r.StopLimitPrice, SL: r.SL, TP: r.TP,
			Expiration: r.Expiration}}
	if r.Type.IsPending() {
		ev.TimeInForce = r.TimeInForce.String()
	}
	if q := o.Quote; q != nil {
		bid, ask := q.Bid, q.Ask
		ev.QuoteBid, ev.QuoteAsk, ev.QuoteTime = &bid, &ask, q.Time
	}
	return ev
}
