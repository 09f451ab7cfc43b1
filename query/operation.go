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

// OperationWatcher wakes a waiter whenever the change feed reports a change of an
// operation that answers it (projections.ChangeFeed): a state that answers nobody yet wakes
// no one. The channel is buffered: wake-ups coalesce.
type OperationWatcher interface {
	WatchOperation(operationID string) (<-chan struct{}, func())
}

// OperationAwaiter answers the endpoints that wait (RESULT, PUT/DELETE /v1/order, PUT
// /v1/position): it waits until an operation is answered or the time is up, woken by the
// change feed (no polling loop).
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

// Await waits up to timeout until attempt (or a later one) of operation operationID is
// answered (Answered). It returns the operation as last read and whether the read model knew
// that attempt at all. It reads the read model at the start, on every wake-up and once more
// when the time is up (the status reached meanwhile is the answer then).
func (a OperationAwaiter) Await(ctx context.Context, operationID string, attempt int, timeout time.Duration) (trading.Operation, bool, error) {
	wake, stop := a.watcher.WatchOperation(operationID) // before the first read: no change is missed
	defer stop()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for last := false; ; {
		op, ok, err := a.ops.Operation(ctx, operationID)
		if err != nil {
			return op, ok, fmt.Errorf("read operation %s: %w", operationID, err)
		}
		ok = ok && op.Attempt >= attempt // an older attempt's answer is not this one's
		if ok && op.Answered() || last {
			return op, ok, nil
		}
		select {
		case <-wake:
		case <-timer.C:
			last = true
		case <-ctx.Done():
			return op, ok, ctx.Err()
		}
	}
}
