package executor

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"tradesvc/events"
	"tradesvc/infra/kafka"
)

// flusher appends each operation's outcome as soon as it is decided: whatever was decided
// while the previous append was in flight goes in the next one, so one produce carries every
// decision that is ready, and no account's answer waits for the slowest send of its batch.
type flusher struct {
	out       Appender
	store     *executions
	log       *slog.Logger
	onOutcome func(kind, status string, took time.Duration)
	stage     func(string, time.Duration)
	in        chan flushItem
	// project and positioned, when set: an outcome appended on its own is applied early
	// (ExecutorConfig.Project, appendAlone).
	project    Projector
	positioned PositionedAppender
}

type flushItem struct {
	d    decision
	done chan error // the append's result, exactly once
}

func newFlusher(out Appender, store *executions, log *slog.Logger, onOutcome func(string, string, time.Duration), stage func(string, time.Duration)) *flusher {
	return &flusher{out: out, store: store, log: log, onOutcome: onOutcome, stage: stage, in: make(chan flushItem, 4096)}
}

// push hands a decision over; the channel reports when its outcome is in the log (or why
// it could not be appended).
func (f *flusher) push(d decision) <-chan error {
	done := make(chan error, 1)
	f.store.appending(d)
	f.in <- flushItem{d: d, done: done} // the flusher reads until every handler has returned
	return done
}

// run appends what is pushed until consumed is closed (every handler has returned), then
// what is left. Appends may go on for flushTimeout after ctx ends: outcomes decided before
// the stop are known and should not be left to a reconciliation.
func (f *flusher) run(ctx context.Context, consumed <-chan struct{}) {
	actx, done := outliving(ctx, flushTimeout)
	defer done()
	for {
		var first flushItem
		select {
		case first = <-f.in:
		case <-consumed:
			f.drain(actx)
			return
		}
		f.flush(actx, f.gather(first))
	}
}

// gather takes first and everything already waiting.
func (f *flusher) gather(first flushItem) []flushItem {
	items := []flushItem{first}
	for {
		select {
		case it := <-f.in:
			items = append(items, it)
		default:
			return items
		}
	}
}

// drain appends what was pushed before the stop.
func (f *flusher) drain(ctx context.Context) {
	for {
		select {
		case it := <-f.in:
			f.flush(ctx, f.gather(it))
		default:
			return
		}
	}
}

// flush appends the outcomes of items in one produce, retried until it succeeds or ctx ends,
// then stores them in cmd.executions behind the loop.
func (f *flusher) flush(ctx context.Context, items []flushItem) {
	evs := make([]events.Event, len(items))
	ds := make([]decision, len(items))
	for i, it := range items {
		evs[i], ds[i] = it.d.outcome, it.d
	}
	var err error
	if f.project != nil {
		err = f.appendProjected(ctx, evs)
	} else {
		err = retry(ctx, func() error { return f.out.Append(ctx, events.TopicExecutions(), evs...) })
	}
	if err != nil {
		err = fmt.Errorf("append %d outcomes: %w", len(evs), err)
	}
	if err == nil {
		// The outcomes are in the log: the operations are decided. Storing them in
		// cmd.executions only lets a redelivered command be skipped sooner; until then the
		// store knows them as being stored (since they were pushed).
		f.store.decidedLater(ds)
	} else {
		// Before any handler hears of the failure: the redelivered commands must be
		// decided again, not skipped as being decided.
		f.store.notAppended(ds)
	}
	for _, it := range items {
		it.done <- err
	}
	if err != nil {
		return
	}
	for _, d := range ds {
		f.stage("appended", time.Since(d.at))
		f.log.Debug("operation decided", "operationId", d.op.op.OperationID, "attempt", d.op.op.Attempt,
			"kind", d.op.kind, "status", d.outcome.Status, "code", d.outcome.Code, "retcode", d.outcome.Retcode)
		if f.onOutcome != nil {
			f.onOutcome(string(d.op.kind), d.outcome.Status, d.took)
		}
	}
}

// appendProjected appends evs, retried until it succeeds or ctx ends, and tells the projection
// of this process where they landed. An outcome decided while no other was waiting is handed
// to it first (project.Early): the projection plans it while the append is on its way and
// applies it as soon as it learns where it landed. At low load that is every outcome, and the
// commit that answers a RESULT comes without the consumer's fetch and decode; under load an
// append carries several, and their projection combines them as its consumer reads them.
func (f *flusher) appendProjected(ctx context.Context, evs []events.Event) error {
	topic := events.TopicExecutions()
	envs, err := f.positioned.Wrap(evs...)
	if err != nil {
		return err
	}
	name, part := f.positioned.PartitionOf(topic, envs[0].Key)
	var landed func(int32, int64, error)
	if len(envs) == 1 && part >= 0 {
		landed = f.project.Early(ctx, name, part, envs[0])
	}
	var at []kafka.Position
	err = retry(ctx, func() error {
		var err error
		at, err = f.positioned.AppendEnvelopesAt(ctx, topic, envs...)
		return err
	})
	if landed != nil {
		if err != nil {
			landed(0, 0, err)
		} else {
			landed(at[0].Partition, at[0].Offset, nil)
		}
	}
	for _, p := range at {
		f.project.Appended(name, p.Partition, p.Offset)
	}
	return err
}

// outliving returns a context that ends grace after ctx ends (or when done is called): work
// already under way when the executor stops is finished, within grace, instead of cut short.
func outliving(ctx context.Context, grace time.Duration) (_ context.Context, done func()) {
	octx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(grace, cancel) })
	return octx, func() {
		stop()
		cancel()
	}
}
