package command

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"tradesvc/events"
)

// AppendWait is how long a request waits for its command's append. An append takes about a
// millisecond, and its p99 stays under half a second at three times the load the service
// sustains; while the broker is down, the producer's own retries take 5 to 17 s to fail.
const AppendWait = 2 * time.Second

// errAppendUnacknowledged is the failure of an append the log did not acknowledge in time.
var errAppendUnacknowledged = errors.New("command: the log did not acknowledge the append in time")

// probeEvery is how often a log that failed is tried again by a new operation (the others
// are refused meanwhile: refusing).
const probeEvery = time.Second

// boundedLog is the appender the handlers use: a request waits for its command's append at
// most wait, or until its context ends, and is then answered -5009 (the status is unknown,
// the idempotency record stays open) like any append that failed. The append itself goes on
// in the background and may still land: a retry with the same id appends the same envelopes
// again, and the executor and the projections drop the copy by its operation id.
//
// It also remembers whether the log failed last: while it did, new operations are refused
// before anything is recorded (refusing; -1000, nothing was done) instead of each waiting
// for an append that fails, except one a second, whose append tells whether the log is back.
type boundedLog struct {
	Appender
	wait time.Duration
	now  func() time.Time
	// down is when the log last failed an append, in Unix nanoseconds (0: it did not, or it
	// acknowledged one since); nextProbe when a new operation may try it again.
	down, nextProbe atomic.Int64
}

// AppendEnvelopes implements Appender.
func (b *boundedLog) AppendEnvelopes(ctx context.Context, topic events.Topic, envs ...events.Envelope) error {
	done := make(chan error, 1) // the background append never blocks on it
	var mu sync.Mutex
	answered := false // the log answered this append: what it said is what the gate learns
	go func() {
		err := b.Appender.AppendEnvelopes(context.WithoutCancel(ctx), topic, envs...)
		mu.Lock()
		answered = true
		b.learn(err)
		mu.Unlock()
		done <- err
	}()
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		mu.Lock()
		late := answered
		if !late {
			b.learn(errAppendUnacknowledged)
		}
		mu.Unlock()
		if late { // the log answered as the bound passed: its answer is on its way
			return <-done
		}
		return fmt.Errorf("%w (%v)", errAppendUnacknowledged, b.wait)
	case <-ctx.Done():
		return fmt.Errorf("append of %d command events: %w", len(envs), context.Cause(ctx))
	}
}

// learn records what an append found the log to be.
func (b *boundedLog) learn(err error) {
	if err == nil {
		if b.down.Load() != 0 { // a load: every acknowledged append passes here
			b.down.Store(0)
		}
		return
	}
	now := b.now().UnixNano()
	if b.down.Swap(now) == 0 {
		b.nextProbe.Store(now + int64(probeEvery))
	}
}

// refusing tells whether a new operation is to be refused because the log failed last; the
// first one asking a second after the failure (or after the last such probe) is let through.
func (b *boundedLog) refusing() bool {
	if b.down.Load() == 0 {
		return false
	}
	now := b.now().UnixNano()
	next := b.nextProbe.Load()
	return now < next || !b.nextProbe.CompareAndSwap(next, now+int64(probeEvery))
}
