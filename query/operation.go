package query

import (
	"context"
	"errors"
	"fmt"
	"time"
	"tradesvc/events/trading"
)

// OperationReader reads one operation of rm.operations; ok is false when the read model
// does not know it (yet).
type OperationReader interface {
	Operation(ctx context.Context, operationID string) (trading.Operation, bool, error)
}

// OperationWatcher delivers the states an operation reaches as the change feed commits them
// (projections.ChangeFeed), starting with the latest recent one: the channel holds the newest
// state not taken yet.
type OperationWatcher interface {
	WatchOperation(operationID string) (<-chan OperationState, func())
}

// OperationAwaiter answers the endpoints that wait (RESULT, PUT/DELETE /v1/order, PUT
// /v1/position): it waits until an operation is answered or the time is up, woken by the
// answer itself (no read per wake, no polling loop).
type OperationAwaiter struct {
	ops     OperationReader
	watcher OperationWatcher
}

// NewOperationAwaiter builds the awaiter.
func NewOperationAwaiter(ops OperationReader, watcher OperationWatcher) (OperationAwaiter, error) {
	if ops == nil || watcher == nil {
		return OperationAwaiter{}, errors.New("query: the operation awaiter needs the operations read model and a watcher")
	}
	return OperationAwaiter{ops: ops, watcher: watcher}, nil
}

// Await waits up to timeout until op's attempt (or a later one) is answered. op is the
// operation as the caller knows it (its request); each state the change feed delivers is
// applied to it, and the first that answers it (Operation.Answered) is returned. When the
// time is up the read model is read once: the status reached meanwhile is the answer then.
// found says whether a state of that attempt was seen at all.
func (a OperationAwaiter) Await(ctx context.Context, op trading.Operation, timeout time.Duration) (trading.Operation, bool, error) {
	return a.await(ctx, op, timeout, (*trading.Operation).Answered)
}

// AwaitSettled waits up to timeout until op, unsettled (trading.Operation.Unsettled), is
// settled or a later attempt is known: a retry that asked the executor to settle it waits
// for that (command.SettleAwaiter). It answers like Await.
func (a OperationAwaiter) AwaitSettled(ctx context.Context, op trading.Operation, timeout time.Duration) (trading.Operation, bool, error) {
	attempt := op.Attempt
	return a.await(ctx, op, timeout, func(cur *trading.Operation) bool { return cur.Attempt > attempt || !cur.Unsettled() })
}

// await waits up to timeout until reached holds for a state of op's attempt (or a later one).
func (a OperationAwaiter) await(ctx context.Context, op trading.Operation, timeout time.Duration,
	reached func(*trading.Operation) bool) (trading.Operation, bool, error) {
	states, stop := a.watcher.WatchOperation(op.OperationID)
	defer stop()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case st := <-states:
			if st.Attempt < op.Attempt {
				continue // an older attempt's answer is not this one's
			}
			cur := op
			st.Derived.Apply(&cur)
			cur.Attempt, cur.Version = st.Attempt, st.Version
			if reached(&cur) {
				return cur, true, nil
			}
		case <-timer.C:
			got, ok, err := a.ops.Operation(ctx, op.OperationID)
			if err != nil {
				return op, false, fmt.Errorf("read operation %s: %w", op.OperationID, err)
			}
			if !ok || got.Attempt < op.Attempt {
				return op, false, nil // the read model has not seen this attempt: as the caller knows it
			}
			return got, true, nil
		case <-ctx.Done():
			return op, false, ctx.Err()
		}
	}
}
