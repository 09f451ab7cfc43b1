package projections

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tradesvc/infra/kafka/batch"
)

// Batches handed in by several consumers of one partition number are applied once each,
// never two transactions at a time, and merged when they arrive while one is running.
func TestCombinerAppliesEveryBatchOnceOneTransactionAtATime(t *testing.T) {
	tr := &Trading{combiners: map[int32]*combiner{}}
	var running, maxRunning, rounds atomic.Int32
	seen := sync.Map{}
	apply := func(_ context.Context, msgs []batch.Message) error {
		n := running.Add(1)
		if n > maxRunning.Load() {
			maxRunning.Store(n)
		}
		rounds.Add(1)
		time.Sleep(2 * time.Millisecond)
		for _, m := range msgs {
			if _, dup := seen.LoadOrStore(m.Offset, true); dup {
				t.Errorf("offset %d applied twice", m.Offset)
			}
		}
		running.Add(-1)
		return nil
	}
	var wg sync.WaitGroup
	const consumers, batches = 3, 50
	for c := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range batches {
				msgs := []batch.Message{{Partition: 5, Offset: int64(c*batches + i)}}
				if err := tr.combine(context.Background(), msgs, apply); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	n := 0
	seen.Range(func(any, any) bool { n++; return true })
	if n != consumers*batches {
		t.Fatalf("%d batches applied, want %d", n, consumers*batches)
	}
	if maxRunning.Load() != 1 {
		t.Fatalf("%d transactions ran at once", maxRunning.Load())
	}
	if rounds.Load() >= consumers*batches {
		t.Fatalf("no batches were merged: %d rounds for %d batches", rounds.Load(), consumers*batches)
	}
}

// A consumer whose context ends while it waits withdraws its batch; the others still get
// theirs applied (leadership is never lost).
func TestCombinerSurvivesAWaiterThatGivesUp(t *testing.T) {
	tr := &Trading{combiners: map[int32]*combiner{}}
	release := make(chan struct{})
	apply := func(_ context.Context, msgs []batch.Message) error {
		<-release
		return nil
	}
	first := make(chan error, 1)
	go func() { first <- tr.combine(context.Background(), []batch.Message{{Partition: 1, Offset: 1}}, apply) }()
	time.Sleep(10 * time.Millisecond) // the first is applying and blocked
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- tr.combine(ctx, []batch.Message{{Partition: 1, Offset: 2}}, apply) }()
	third := make(chan error, 1)
	go func() { third <- tr.combine(context.Background(), []batch.Message{{Partition: 1, Offset: 3}}, apply) }()
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
