package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tradesvc/events"
)

// DefaultAppendWait is how long a request waits for its command's append by default
// (Deps.AppendWait). An append takes about a millisecond, and its p99 stays under half a
// second at three times the load the service sustains; while the broker is down, the
// producer's own retries take 5 to 17 s before they fail.
const DefaultAppendWait = 2 * time.Second

// errAppendUnacknowledged is the failure of an append the log did not acknowledge in time.
var errAppendUnacknowledged = errors.New("command: the log did not acknowledge the append in time")

// boundedLog is the appender the handlers use: a request waits for its command's append at
// most wait, or until its context ends, and is then answered -5009 (the status is unknown,
// the idempotency record stays open) like any append that failed. The append itself goes on
// in the background and may still land: a retry with the same id appends the same envelopes
// again, and the executor and the projections drop the copy by its operation id.
type boundedLog struct {
	Appender
	wait time.Duration
}

// AppendEnvelopes implements Appender.
func (b boundedLog) AppendEnvelopes(ctx context.Context, topic events.Topic, envs ...events.Envelope) error {
	done := make(chan error, 1) // the background append never blocks on it
	go func() { done <- b.Appender.AppendEnvelopes(context.WithoutCancel(ctx), topic, envs...) }()
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("%w (%v)", errAppendUnacknowledged, b.wait)
	case <-ctx.Done():
		return fmt.Errorf("append of %d command events: %w", len(envs), context.Cause(ctx))
	}
}
