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

// execute decides one operation; prior is its cmd.executions row, if any: without outcome
// (the executor died after "sent"), or with an unsettled one (a retry asks to settle it). An
// error means nothing is to be recorded for it: the shutdown interrupted it (errShutdown) or
// the executions store failed; either way the batch comes again. A decision without outcome
// has nothing to append.
func (x *Executor) execute(ctx context.Context, o *operation, prior *execution) (decision, error) {
	start := time.Now()
	var d decision
	var err error
	switch {
	case prior != nil && prior.decided:
		d, err = x.settleAsked(ctx, o, *prior)
	case prior != nil:
		d, err = x.recover(ctx, o, prior.sentAt)
	default:
		d, err = x.dispatch(ctx, o)
	}
	d.op, d.at = o, time.Now()
	d.took = d.at.Sub(start)
	return d, err
}

// dispatch sends an operation seen for the first time, unless it may not or need not be.
func (x *Executor) dispatch(ctx context.Context, o *operation) (decision, error) {
	now := x.cfg.Now()
	if o.invalid != nil {
		return decision{outcome: refused(o, trading.StatusRejected, events.CodeInternal, msgBadCommand+o.invalid.Error(), now.UnixMilli())}, nil
	}
	if o.void {
		out := refused(o, trading.StatusRejected, events.CodeClientOrderIDReused, msgVoid, now.UnixMilli())
		out.Void = true
		return decision{outcome: out}, nil
	}
	if o.superseded {
		// Its record was lost to a Postgres crash and a retry bound the client order id to
		// an operation of its own (claimRows): only that one may trade.
		return decision{outcome: refused(o, trading.StatusRejected, events.CodeClientOrderIDReused, msgSuperseded, now.UnixMilli())}, nil
	}
	if !o.inWindow(now.UnixMilli(), x.cfg.DispatchWindow) {
		// The gateway has long answered; a client may already have retried, which queues
		// the operation again as its next attempt. Sending this one late could run it twice.
		return decision{outcome: refused(o, trading.StatusRejected, events.CodeUnavailable, msgNotDispatched, now.UnixMilli())}, nil
	}
	if o.op.Attempt > 1 && o.kind.ByTag() {
		// A retry after a refusal without sending: an earlier attempt that reached the
		// trade server after all must not be repeated.
		out, ev, err := x.reconcile(ctx, o, now.UnixMilli())
		switch {
		case err != nil && interrupted(ctx, err):
			return decision{}, fmt.Errorf("%w: %s: %w", errShutdown, o.op.OperationID, err)
		case errors.Is(err, mt5.ErrDisconnected):
			return decision{outcome: refused(o, trading.StatusRejected, events.CodeNoConnection, msgNoConnection, now.UnixMilli())}, nil
		case err != nil:
			x.log.Warn("cannot tell whether an earlier attempt executed; not sending", "operationId", o.op.OperationID, "err", err)
			return decision{outcome: refused(o, trading.StatusInDoubt, events.CodeStatusUnknown, msgUnknown, now.UnixMilli())}, nil
		case ev == executed:
			return decision{outcome: out}, nil
		}
	}
	at := x.cfg.Now() // the send's time, which its outcome reports
	switch {
	case !o.recordedAt.IsZero() && at.Sub(o.recordedAt) <= x.restampAfter():
		// Its row, written a moment ago (by the batch's claim, or with its record: early.go),
		// keeps its time.
	case !o.recordedAt.IsZero():
		// Its turn came long after the batch's claim (its account's earlier sends were slow),
		// or its row is an earlier claim's that never sent it (ownClaims): the row is stamped
		// again first, so that the time it holds is its send's. A next owner counts the send
		// deadline from that time (recover), and the settling decides "did not execute" only
		// long after it: from the claim's time, a send still to come could be taken for one
		// that never reached the trade server, and sent again.
		won, err := x.store.retake(ctx, o.key(), o.recordedAt, at)
		switch {
		case err != nil:
			return decision{}, storeFailed(ctx, err)
		case !won:
			return x.taken(ctx, o)
		}
	default:
		inserted, err := x.store.sent(ctx, o, at)
		switch {
		case err != nil:
			return decision{}, storeFailed(ctx, err)
		case !inserted:
			return x.taken(ctx, o)
		}
	}
	return x.sendAt(ctx, o, false, at)
}

// storeFailed is what a failed statement of the executions store makes of the operation's
// decision: the shutdown's interruption when the executor is stopping, else the failure (the
// batch comes again).
func storeFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", errShutdown, err)
	}
	return err
}

// restampAfter is how long after its claim an attempt may be sent under the claim's time; a
// later send stamps its row again (dispatch). The send deadline's grace covers the rest.
func (x *Executor) restampAfter() time.Duration { return x.cfg.SettleGrace / 2 }

// taken decides an operation whose "sent" row this executor did not write, or that changed
// since it did: another executor recorded it since this batch was read (a partition handed
// over), and may be sending it right now; or the dispatch sweeper closed its window (its row
// carries the outcome): then it is decided, and nothing is sent.
func (x *Executor) taken(ctx context.Context, o *operation) (decision, error) {
	e, ok, err := x.store.get(ctx, o.key())
	switch {
	case err != nil:
		return decision{}, storeFailed(ctx, err)
	case ok && e.decided:
		return decision{}, nil
	case ok:
		return x.recover(ctx, o, e.sentAt)
	}
	return x.recover(ctx, o, x.cfg.Now())
}

// sendAt sends o (resend: again, after a crash; send) and decides it with at as its send time.
func (x *Executor) sendAt(ctx context.Context, o *operation, resend bool, at time.Time) (decision, error) {
	out, err := x.send(ctx, o, resend)
	if err != nil {
		return decision{}, err
	}
	out.SentAt = at.UnixMilli()
	return decision{outcome: out}, nil
}

// recover decides an operation recorded as sent whose outcome never reached the log: the
// executor died in between. Orders and closes are reconciled by tag, and sent again only once
// the trade server confirms they never executed (resend); the idempotent modifications and
// removals are simply sent again.
func (x *Executor) recover(ctx context.Context, o *operation, sentAt time.Time) (decision, error) {
	if !o.kind.ByTag() {
		return x.sendAt(ctx, o, true, x.cfg.Now())
	}
	deadline := sentAt.Add(x.deadline())
	if left := deadline.Sub(x.cfg.Now()); left > 0 && left <= recoverWait {
		// Found after a crash, the attempt is usually that close to its deadline (a dead
		// executor's partitions move once its session times out): waiting for it makes a
		// tag found nowhere a proof (below) rather than an IN_DOUBT settled later.
		if err := wait.For(ctx, left); err != nil {
			return decision{}, fmt.Errorf("%w: %s: %w", errShutdown, o.op.OperationID, err)
		}
	}
	at := x.cfg.Now()
	now := at.UnixMilli()
	out, ev, err := x.reconcile(ctx, o, now)
	if err != nil {
		if interrupted(ctx, err) {
			return decision{}, fmt.Errorf("%w: %s: %w", errShutdown, o.op.OperationID, err)
		}
		x.log.Warn("reconcile after a crash failed", "operationId", o.op.OperationID, "err", err)
	}
	if err == nil && ev == noEvidence && !at.Before(deadline) && at.Before(deadline.Add(abandonedAfter)) &&
		o.inWindow(now, x.cfg.DispatchWindow) {
		return x.resend(ctx, o, sentAt, at)
	}
	if ev == noEvidence || err != nil {
		out = refused(o, trading.StatusInDoubt, events.CodeStatusUnknown, msgUnknown, now)
	}
	out.SentAt = sentAt.UnixMilli()
	return decision{outcome: out}, nil
}

// recoverWait is how long recover waits for a found attempt's send deadline to pass.
const recoverWait = 2 * time.Second

// resend sends again an attempt that the trade server confirms never executed: its "sent" row
// was left by an executor that died between its claim and its send (or whose send died with
// it), and its deadline has passed with its tag found nowhere. It is still inside its dispatch
// window, so it is sent as it would have been, late: the client was told it was queued. The
// row's send time is taken over first (only the executor that finds it unchanged sends), so
// that two executors recovering the same attempt send it once; and only before the row
// counts as abandoned (settle.go), which the background settling decides "did not execute".
func (x *Executor) resend(ctx context.Context, o *operation, sentAt, at time.Time) (decision, error) {
	won, err := x.store.retake(ctx, o.key(), sentAt, at)
	switch {
	case err != nil:
		return decision{}, storeFailed(ctx, err)
	case !won:
		return decision{}, nil // another executor took it over, or decided it
	}
	x.log.Info("sending an attempt the trade server never received (its executor died before sending it)",
		"operationId", o.op.OperationID, "attempt", o.op.Attempt, "firstSentAt", sentAt)
	return x.sendAt(ctx, o, false, at)
}

// sendGrace is how long a send already under way may go on once the executor is stopping
// (its outcome is then appended within flushTimeout); past it the send is cut short and left
// to the next owner to reconcile.
const sendGrace = 2 * time.Second

// send hands the request to the trade server and maps what came back (docs/trading.md, the
// tables of in-band answers and of no answer).
func (x *Executor) send(ctx context.Context, o *operation, resend bool) (*events.ExecutionOutcome, error) {
	// A send under way when the executor stops goes on for sendGrace: cut short before it
	// reached the trade server, it would leave its attempt to the next owner, who finds it not
	// executed and rejects it (an acknowledged order never tried, for a stop that came a
	// moment after its claim).
	gctx, done := outliving(ctx, sendGrace)
	sctx, cancel := context.WithTimeout(gctx, x.cfg.SendTimeout)
	start := time.Now()
	res, err := x.cfg.Port.Send(sctx, o.req)
	x.cfg.Stage("sent", time.Since(start))
	cancel()
	done()
	now := x.cfg.Now().UnixMilli()
	if err == nil {
		out := answered(o, res, resend, now)
		if resend && o.removesOrder() && res.Retcode == trading.RetOrderChanged {
			return x.cancelResent(ctx, o, res, out)
		}
		return out, nil
	}
	if interrupted(ctx, err) {
		return nil, fmt.Errorf("%w: %s: %w", errShutdown, o.op.OperationID, err)
	}
	var fallback *events.ExecutionOutcome
	switch {
	case errors.Is(err, mt5.ErrDisconnected):
		// Refused before it left: nothing to reconcile.
		return refused(o, trading.StatusRejected, events.CodeNoConnection, msgNoConnection, now), nil
	case errors.Is(err, mt5.ErrNoAnswer):
		fallback = unanswered(o, now)
	case errors.Is(err, mt5.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		// The executor's own send timeout is the trade server not answering in time too.
		fallback = refused(o, trading.StatusInDoubt, events.CodeServerTimeout, msgTimeout, now)
	default:
		fallback = refused(o, trading.StatusInDoubt, events.CodeStatusUnknown, msgUnknown, now)
	}
	x.log.Warn("no answer from the trade server", "operationId", o.op.OperationID, "kind", o.kind, "err", err)
	if !o.kind.ByTag() {
		return fallback, nil
	}
	out, ev, rerr := x.reconcile(ctx, o, now)
	if rerr != nil {
		if interrupted(ctx, rerr) {
			return nil, fmt.Errorf("%w: %s: %w", errShutdown, o.op.OperationID, rerr)
		}
		x.log.Warn("reconcile after no answer failed", "operationId", o.op.OperationID, "err", rerr)
		return fallback, nil
	}
	if ev == noEvidence {
		return fallback, nil
	}
	return out, nil
}

// cancelResent settles a removal sent again after a crash that finds its order off the book
// (10023): cancelled means the first send was applied; filled or expired meanwhile means the
// removal came too late, which is the answer's ordinary meaning.
func (x *Executor) cancelResent(ctx context.Context, o *operation, res mt5.TradeResult, out *events.ExecutionOutcome) (*events.ExecutionOutcome, error) {
	hist, err := x.cfg.Port.OrderHistory(ctx, o.op.Login, 0, x.cfg.Now().Add(24*time.Hour).UnixMilli())
	if err != nil {
		if interrupted(ctx, err) {
			return nil, fmt.Errorf("%w: %s: %w", errShutdown, o.op.OperationID, err)
		}
		x.log.Warn("order history unavailable; taking the resent removal as applied", "operationId", o.op.OperationID, "err", err)
		return out, nil
	}
	for _, h := range hist {
		if h.Ticket == o.req.Order && h.State != trading.StateCanceled {
			return answered(o, res, false, out.DecidedAt), nil
		}
	}
	return out, nil
}

// interrupted reports whether err comes from the shutdown rather than the trade server.
func interrupted(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, mt5.ErrClosed)
}
