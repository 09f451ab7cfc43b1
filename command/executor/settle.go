package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/infra/wait"
)

// Settling (docs/trading.md, "Settling what is unknown"): an attempt left IN_DOUBT, or sent
// without an answer, is asked about by its tag until the trade server confirms what became of
// it. Only a confirmation settles it: its deals (FILLED, PARTIALLY_FILLED), its order (placed,
// refused), or, once its send deadline has passed, the tag found nowhere (REJECTED -1000, "did
// not execute", no retcode: a retry then sends it again as the next attempt). Settling never
// sends. Its outcome is a new ExecutionOutcome_v1 of the same attempt, decided later, which
// the projections take over the earlier one.

// msgNotExecuted is the outcome of an attempt the trade server confirmed did not execute. It
// starts like every "service unavailable" -1000 (the spec's reading "nothing was done").
const msgNotExecuted = "Service unavailable; the trade server confirmed that the request did not execute."

// unsettled reports whether the decided execution e of o is unsettled (trading.Kind.Unsettled).
func (x *Executor) unsettled(o *operation, e execution) bool {
	return e.decided && o.kind.Unsettled(o.typ, trading.Status(e.status), e.unanswered)
}

// deadline is how long after an attempt was sent the trade server may still execute it: the
// executor's own bound on one send, and a grace for the clocks. Before it, a tag found nowhere
// proves nothing.
func (x *Executor) deadline() time.Duration { return x.cfg.SendTimeout + x.cfg.SettleGrace }

// settleAsked settles an unsettled attempt whose command came again: a same-id retry asks,
// so it is settled now if it can be; if not (its deadline has not passed, the trade server
// cannot be reached), the background settles it later (settleLoop). Nothing to say is a
// decision without outcome.
func (x *Executor) settleAsked(ctx context.Context, o *operation, e execution) (decision, error) {
	out, err := x.settle(ctx, o, e.sentAt, e.decidedAt)
	if err != nil {
		if interrupted(ctx, err) {
			return decision{}, fmt.Errorf("%w: %s: %w", errShutdown, o.op.OperationID, err)
		}
		x.log.Info("unsettled attempt not settled yet; it is settled once the trade server answers",
			"operationId", o.op.OperationID, "attempt", o.op.Attempt, "err", err)
		return decision{}, nil
	}
	return decision{outcome: out}, nil
}

// settle asks the trade server what became of o (sent at sentAt; its outcome so far, if any,
// decided at decidedAt) and returns the outcome it confirms, or nil when nothing is
// confirmed yet. An error is the trade server's (unreachable, say): nothing is confirmed.
func (x *Executor) settle(ctx context.Context, o *operation, sentAt, decidedAt time.Time) (*events.ExecutionOutcome, error) {
	now := x.cfg.Now()
	out, ev, err := x.reconcile(ctx, o, now.UnixMilli())
	if err != nil {
		return nil, err
	}
	if ev == noEvidence {
		if now.Before(sentAt.Add(x.deadline())) {
			return nil, nil // it may still execute
		}
		if !o.market() {
			// A pending placement: the trade server's known shortfalls can hide its order
			// from the lookup by tag, so its open orders are asked too.
			if out, err = x.restingByTag(ctx, o, now.UnixMilli()); err != nil || out != nil {
				return x.stamped(out, sentAt, decidedAt, now), err
			}
		}
		out = refused(o, trading.StatusRejected, events.CodeUnavailable, msgNotExecuted, now.UnixMilli())
		out.Reconciled = true
	}
	return x.stamped(out, sentAt, decidedAt, now), nil
}

// stamped gives a settlement the attempt's send time, and a decision time after the outcome
// it replaces (a clock behind that outcome's must not make the settlement look older).
func (x *Executor) stamped(out *events.ExecutionOutcome, sentAt, decidedAt, now time.Time) *events.ExecutionOutcome {
	if out == nil {
		return nil
	}
	out.SentAt = sentAt.UnixMilli()
	out.DecidedAt = max(now.UnixMilli(), decidedAt.UnixMilli()+1)
	return out
}

// restingByTag finds o's pending order among the login's open orders by the tag its comment
// ends in: NEW with its order id, or nil when none carries it.
func (x *Executor) restingByTag(ctx context.Context, o *operation, now int64) (*events.ExecutionOutcome, error) {
	orders, err := x.cfg.Port.OpenOrders(ctx, o.op.Login)
	if err != nil {
		return nil, fmt.Errorf("open orders of %d: %w", o.op.Login, err)
	}
	for _, ord := range orders {
		if trading.TagOf(ord.Comment) == o.op.Tag {
			out := newOutcome(o, now)
			out.Status, out.Reconciled, out.Msg = string(trading.StatusNew), true, "Order placed."
			out.OrderID, out.Price, out.Volume = ord.Ticket, nonZero(ord.Price), nonZero(ord.VolumeInitial)
			return out, nil
		}
	}
	return nil, nil
}

// settleLoop settles, every SettleEvery until ctx ends, the attempts no retry asked about:
// the unsettled outcomes whose deadline has passed, and the attempts recorded "sent" whose
// outcome never came (settle_store.go). Each settlement is appended and stored like any
// outcome (the flusher). Several executors may settle one attempt at once: they ask the same
// trade server after the deadline, so they settle it the same way.
func (x *Executor) settleLoop(ctx context.Context) {
	unreachable := false // said once, not every round
	wait.Every(ctx, x.cfg.SettleEvery, func() {
		n, err := x.SettleOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		switch down := errors.Is(err, mt5.ErrDisconnected); {
		case down && !unreachable:
			x.log.Warn("unsettled attempts wait for the trade server to answer again", "err", err)
		case !down && unreachable:
			x.log.Info("the trade server answers again; settling what waited")
		case err != nil && !down:
			x.log.Warn("settling unsettled attempts", "settled", n, "err", err)
		}
		unreachable = errors.Is(err, mt5.ErrDisconnected)
		if n > 0 {
			x.log.Info("settled unsettled attempts", "settled", n)
		}
	})
}

// SettleOnce settles what can be settled now and reports how many attempts it settled. It
// stops at the first failure to reach the trade server (the rest waits for the next round).
// Call it only while Run runs (its outcomes go through Run's flusher).
func (x *Executor) SettleOnce(ctx context.Context) (int, error) {
	now := x.cfg.Now()
	settled := 0
	var after unsettledCursor
	for {
		rows, err := x.store.unsettled(ctx, settleKinds, now.Add(-x.deadline()), now.Add(-x.deadline()-abandonedAfter),
			now.Add(-settleHorizon), after, settlePage)
		if err != nil {
			return settled, err
		}
		for _, r := range rows {
			after = r.cursor
			o, ok := r.operation()
			if !ok || !o.kind.Unsettled(o.typ, trading.Status(r.status), r.unanswered) && r.decided {
				continue
			}
			start := time.Now()
			out, err := x.settle(ctx, o, r.sentAt, r.decidedAt)
			if err != nil {
				if interrupted(ctx, err) {
					return settled, nil
				}
				if errors.Is(err, mt5.ErrDisconnected) {
					return settled, fmt.Errorf("the trade server is unreachable: %w", err)
				}
				x.log.Warn("cannot settle an unsettled attempt yet", "operationId", o.op.OperationID, "err", err)
				continue
			}
			if out == nil {
				continue
			}
			at := time.Now()
			if err := <-x.flush.push(decision{op: o, outcome: out, at: at, took: at.Sub(start)}); err != nil {
				return settled, err
			}
			settled++
		}
		if len(rows) < settlePage {
			return settled, nil
		}
	}
}

// Bounds of the background settling.
const (
	// abandonedAfter: a "sent" row still without outcome this long after its deadline was
	// left by an executor that died (a live one decides within its send timeout and appends
	// at once); younger, it may still be on its way.
	abandonedAfter = 30 * time.Second
	// settleHorizon: older attempts are no longer asked about (a retry after it is a new
	// order: the client order id lasts command.Retention).
	settleHorizon = 24 * time.Hour
	settlePage    = 64
)

// settleKinds are the kinds whose attempts can be settled by tag.
var settleKinds = trading.KindNames(func(k trading.Kind) bool { return k.ByTag() })
