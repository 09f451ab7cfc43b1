package executor

import (
	"context"
	"fmt"
	"sort"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// evidence is what the trade server holds under an operation's tag.
type evidence int

const (
	noEvidence evidence = iota
	// executed: deals, or a pending order that was placed. The operation reached the server
	// and did something; it must not be sent again.
	executed
	// refusedOrder: only an order the server refused (state 5) or cancelled unfilled.
	refusedOrder
)

// reconcile asks the trade server what became of o by its tag (docs/trading.md, "Reconcile
// by tag"): the deals it made (distinct deals, volume-weighted price, first deal, order and
// position), else the order it placed or refused. The outcome, when there is evidence,
// carries Reconciled and no retcode.
func (x *Executor) reconcile(ctx context.Context, o *operation, now int64) (*events.ExecutionOutcome, evidence, error) {
	deals, err := x.cfg.Port.DealsByTag(ctx, o.op.Login, o.op.Tag)
	if err != nil {
		return nil, noEvidence, fmt.Errorf("deals of %s by tag %s: %w", o.op.OperationID, o.op.Tag, err)
	}
	if fills := tradingDeals(deals); len(fills) > 0 {
		out, err := x.fillOutcome(ctx, o, fills, now)
		return out, executed, err
	}
	orders, err := x.cfg.Port.OrdersByTag(ctx, o.op.Login, o.op.Tag)
	if err != nil {
		return nil, noEvidence, fmt.Errorf("orders of %s by tag %s: %w", o.op.OperationID, o.op.Tag, err)
	}
	sort.Slice(orders, func(i, j int) bool { return orders[i].Ticket < orders[j].Ticket })
	for _, ord := range orders {
		if ord.Type.IsPending() && ord.State != trading.StateRejected {
			// Placed: whatever happened to it since (cancelled, expired) the order's own
			// reports tell; the placement itself succeeded.
			out := newOutcome(o, now)
			out.Status, out.Reconciled, out.Msg = string(trading.StatusNew), true, "Order placed."
			out.OrderID, out.Price, out.Volume = ord.Ticket, nonZero(ord.Price), nonZero(ord.VolumeInitial)
			return out, executed, nil
		}
	}
	for _, ord := range orders {
		// A market order without deals, or a refused pending order: the server took the
		// request and did not execute it.
		if ord.State == trading.StateRejected || ord.State == trading.StateCanceled {
			out := newOutcome(o, now)
			out.Status, out.Reconciled, out.OrderID = string(trading.StatusRejected), true, ord.Ticket
			out.Code, out.Msg = int(events.CodeServerRejected), "The trade server refused the request."
			if ord.State == trading.StateCanceled {
				out.Code, out.Msg = int(events.CodeServerCanceled), "The trade server cancelled the request."
			}
			return out, refusedOrder, nil
		}
	}
	return nil, noEvidence, nil
}

// fillOutcome sums the distinct fills of an operation: FILLED when they reach the requested
// volume (a full close: when the position is gone), else PARTIALLY_FILLED.
func (x *Executor) fillOutcome(ctx context.Context, o *operation, fills []mt5.Deal, now int64) (*events.ExecutionOutcome, error) {
	var volume, notional apd.Decimal
	for _, d := range fills {
		volume = dec.Add(volume, d.Volume)
		notional = dec.Add(notional, dec.Mul(d.Volume, d.Price))
	}
	price := fills[0].Price
	if len(fills) > 1 {
		vwap, err := dec.Quo(notional, volume)
		if err != nil {
			return nil, fmt.Errorf("average price of %d fills of %s: %w", len(fills), o.op.OperationID, err)
		}
		price.Reduce(&vwap)
	}
	out := newOutcome(o, now)
	out.Reconciled = true
	out.DealID, out.OrderID, out.Position = fills[0].Ticket, fills[0].Order, fills[0].Position
	out.Price, out.Volume = nonZero(price), nonZero(volume)
	complete := !o.want.IsZero() && volume.Cmp(&o.want) >= 0
	if o.kind.Target() == trading.TargetPosition && o.want.IsZero() { // a full close
		open, err := x.positionOpen(ctx, o.op.Login, o.req.Position)
		if err != nil {
			return nil, err
		}
		complete = !open
	}
	out.Status, out.Msg = string(trading.StatusPartiallyFilled), "Order partially filled."
	if complete {
		out.Status, out.Msg = string(trading.StatusFilled), answerMsg(o.kind, trading.StatusFilled, trading.RetDone)
	}
	return out, nil
}

func (x *Executor) positionOpen(ctx context.Context, login, ticket int64) (bool, error) {
	ps, err := x.cfg.Port.Positions(ctx, login)
	if err != nil {
		return false, fmt.Errorf("positions of %d: %w", login, err)
	}
	for _, p := range ps {
		if p.Ticket == ticket {
			return true, nil
		}
	}
	return false, nil
}

// tradingDeals keeps the distinct buy and sell deals (a deal listed twice counts once), in
// ticket order, so the first is the operation's first deal.
func tradingDeals(ds []mt5.Deal) []mt5.Deal {
	seen := map[int64]bool{}
	var out []mt5.Deal
	for _, d := range ds {
		if (d.Action == trading.DealBuy || d.Action == trading.DealSell) && !seen[d.Ticket] {
			seen[d.Ticket] = true
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ticket < out[j].Ticket })
	return out
}
