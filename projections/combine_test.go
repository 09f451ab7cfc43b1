package projections

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"tradesvc/infra/kafka/batch"
)

// A consumer whose context ends while it waits withdraws its batch; the others still get
// theirs applied (leadership is never lost).
func TestCombinerSurvivesAWaiterThatGivesUp(t *testing.T) {
	c := &combiner{}
	release := make(chan struct{})
	apply := func(_ context.Context, msgs []batch.Message) error {
		<-release
		return nil
	}
	first := make(chan error, 1)
	go func() { first <- c.combine(context.Background(), []batch.Message{{Partition: 1, Offset: 1}}, apply) }()
	time.Sleep(10 * time.Millisecond) // the first is applying and blocked
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- c.combine(ctx, []batch.Message{{Partition: 1, Offset: 2}}, apply) }()
	third := make(chan error, 1)
	go func() { third <- c.combine(context.Background(), []batch.Message{{Partition: 1, Offset: 3}}, apply) }()
	time.Sleep(10 * time.Millisecond)
	cancel()
	if err := <-gaveUp; err == nil {
		t.Fatal("a waiter whose context ended reported success")
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-third:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the third batch was never applied: leadership was lost")
	}
}

// A merged round that fails is applied again one consumer's batch at a time, so that a
// message that cannot be applied fails only its own consumer's batch: another topic's
// consumer is never charged with it (it would count towards parking its own messages).
func TestCombinerChargesAFailureOnlyToTheBatchThatCausedIt(t *testing.T) {
	c := &combiner{}
	release := make(chan struct{})
	var calls atomic.Int32
	apply := func(_ context.Context, msgs []batch.Message) error {
		if calls.Add(1) == 1 {
			<-release // hold the first round so that the next two are merged
			return nil
		}
		for _, m := range msgs {
			if m.Offset == 666 {
				return errPoison
			}
		}
		return nil
	}
	first := make(chan error, 1)
	go func() { first <- c.combine(context.Background(), []batch.Message{{Partition: 2, Offset: 1}}, apply) }()
	for calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	poisoned := make(chan error, 1)
	go func() {
		poisoned <- c.combine(context.Background(), []batch.Message{{Partition: 2, Offset: 666}}, apply)
	}()
	innocent := make(chan error, 1)
	go func() {
		innocent <- c.combine(context.Background(), []batch.Message{{Partition: 2, Offset: 7}}, apply)
	}()
	time.Sleep(50 * time.Millisecond) // both handed in while the first round is held
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-poisoned; err != errPoison {
		t.Errorf("the poisoned batch got %v, want its own error", err)
	}
	if err := <-innocent; err != nil {
		t.Errorf("the innocent batch got %v, want it applied", err)
	}
}

var errPoison = errorString("check constraint violated")

type errorString string

func (e errorString) Error() string { return string(e) }
