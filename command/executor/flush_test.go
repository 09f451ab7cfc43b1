package executor

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"tradesvc/events"
	"tradesvc/infra/kafka"
)

// positionedFake appends nothing: it wraps each event in an envelope of its own id, says every
// record goes to partition 3, fails its first `fail` appends, and lands records at 40 on.
type positionedFake struct {
	fail     int
	attempts [][]string // the envelope ids of each append
	next     int64
}

func (f *positionedFake) Append(context.Context, events.Topic, ...events.Event) error {
	return errors.New("Append: the projected path appends with AppendEnvelopesAt")
}

func (f *positionedFake) Wrap(evs ...events.Event) ([]events.Envelope, error) {
	out := make([]events.Envelope, len(evs))
	for i, ev := range evs {
		out[i] = events.Envelope{ID: fmt.Sprintf("env-%s", ev.(*events.ExecutionOutcome).OperationID), Key: "1001"}
	}
	return out, nil
}

func (f *positionedFake) PartitionOf(topic events.Topic, _ string) (string, int32) {
	return "p." + topic.Name, 3
}

func (f *positionedFake) AppendEnvelopesAt(_ context.Context, _ events.Topic, envs ...events.Envelope) ([]kafka.Position, error) {
	ids := make([]string, len(envs))
	for i, env := range envs {
		ids[i] = env.ID
	}
	f.attempts = append(f.attempts, ids)
	if len(f.attempts) <= f.fail {
		return nil, errors.New("not acknowledged")
	}
	out := make([]kafka.Position, len(envs))
	for i := range envs {
		out[i] = kafka.Position{Partition: 3, Offset: 40 + f.next}
		f.next++
	}
	return out, nil
}

// projectorFake records what the executor tells the projection.
type projectorFake struct {
	refuse   bool
	early    []string // "topic/partition/envelope id" of each outcome handed over early
	landed   []string // "partition/offset/error" of each landing told
	appended []string // "topic/partition/offset" of each outcome appended
}

func (p *projectorFake) Early(_ context.Context, topic string, partition int32, env events.Envelope) func(int32, int64, error) {
	p.early = append(p.early, fmt.Sprintf("%s/%d/%s", topic, partition, env.ID))
	if p.refuse {
		return nil
	}
	return func(at int32, offset int64, err error) {
		p.landed = append(p.landed, fmt.Sprintf("%d/%d/%v", at, offset, err))
	}
}

func (p *projectorFake) Appended(topic string, partition int32, offset int64) {
	p.appended = append(p.appended, fmt.Sprintf("%s/%d/%d", topic, partition, offset))
}

func outcomes(ids ...string) []events.Event {
	out := make([]events.Event, len(ids))
	for i, id := range ids {
		out[i] = &events.ExecutionOutcome{OperationID: id}
	}
	return out
}

// An outcome decided alone is handed to the projection before its append, with the partition
// it goes to, and told where it landed once the append (retried with the very same envelope)
// is acknowledged; outcomes appended together are not handed over early, and the projection
// learns where every outcome landed.
func TestFlusherHandsAnOutcomeDecidedAloneToTheProjectionWithWhereItLanded(t *testing.T) {
	ctx := context.Background()
	topic := "p." + events.TopicExecutions().Name

	app, proj := &positionedFake{fail: 1}, &projectorFake{}
	f := &flusher{project: proj, positioned: app}
	if err := f.appendProjected(ctx, outcomes("a")); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(proj.early) != fmt.Sprintf("[%s/3/env-a]", topic) {
		t.Fatalf("handed over early: %v", proj.early)
	}
	if fmt.Sprint(app.attempts) != "[[env-a] [env-a]]" {
		t.Fatalf("appends: %v, want the same envelope retried", app.attempts)
	}
	if fmt.Sprint(proj.landed) != "[3/40/<nil>]" || fmt.Sprint(proj.appended) != fmt.Sprintf("[%s/3/40]", topic) {
		t.Fatalf("landed %v, appended %v", proj.landed, proj.appended)
	}

	app, proj = &positionedFake{}, &projectorFake{}
	f = &flusher{project: proj, positioned: app}
	if err := f.appendProjected(ctx, outcomes("b", "c")); err != nil {
		t.Fatal(err)
	}
	if len(proj.early) != 0 || len(proj.landed) != 0 {
		t.Fatalf("outcomes appended together were handed over early: %v %v", proj.early, proj.landed)
	}
	if fmt.Sprint(proj.appended) != fmt.Sprintf("[%s/3/40 %s/3/41]", topic, topic) {
		t.Fatalf("appended %v", proj.appended)
	}

	// The projection declines (an outcome of its partition pending): the append goes on.
	app, proj = &positionedFake{}, &projectorFake{refuse: true}
	f = &flusher{project: proj, positioned: app}
	if err := f.appendProjected(ctx, outcomes("d")); err != nil {
		t.Fatal(err)
	}
	if len(app.attempts) != 1 || fmt.Sprint(proj.appended) != fmt.Sprintf("[%s/3/40]", topic) {
		t.Fatalf("appends %v, appended %v", app.attempts, proj.appended)
	}
}

// An append that never succeeds (the executor stopping) tells the projection so: the outcome
// is left to the consumer, which finds it in the log if it got there after all.
func TestFlusherTellsTheProjectionOfAnAppendThatFailed(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	app, proj := &positionedFake{fail: 1 << 30}, &projectorFake{}
	f := &flusher{project: proj, positioned: app}
	cancel()
	if err := f.appendProjected(ctx, outcomes("e")); err == nil {
		t.Fatal("an append that never succeeded reported success")
	}
	if len(proj.landed) != 1 || proj.landed[0] != "0/0/not acknowledged" || len(proj.appended) != 0 {
		t.Fatalf("landed %v, appended %v", proj.landed, proj.appended)
	}
}
