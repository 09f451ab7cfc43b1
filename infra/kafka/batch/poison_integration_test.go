package batch_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
)

// failing is a handler that applies every event but those rejected by poison, recording
// what it applied in order.
type failing struct {
	mu      sync.Mutex
	applied []uint64 // seqs of key P, in order
	poison  func(tk *events.TickReceived) error
}

func (f *failing) handle(_ context.Context, msgs []batch.Message) error {
	for _, m := range msgs {
		if tk, ok := m.Event.(*events.TickReceived); ok {
			if err := f.poison(tk); err != nil {
				return err
			}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range msgs {
		f.applied = append(f.applied, m.Event.(*events.TickReceived).Seq)
	}
	return nil
}

func (f *failing) seqs() []uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]uint64(nil), f.applied...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A message that fails the same way MaxAttempts times while the store answers is parked with
// its error and attempt count; the batch it came in is applied around it, in order, and the
// consumer goes on with what follows. A new consumer of the group does not see it again.
func TestRunParksAMessageThatFailsTheSameWayAndGoesOn(t *testing.T) {
	e := btSetup(t, 1)
	var msgs []rawMsg
	for s := 1; s <= 10; s++ {
		msgs = append(msgs, envelopeMsg(t, tick("P", s)))
	}
	e.publish(msgs...)
	f := &failing{poison: func(tk *events.TickReceived) error {
		if tk.Seq == 4 {
			return errors.New("check constraint violated by seq 4")
		}
		return nil
	}}
	cfg := e.runConfig(100)
	cfg.MaxAttempts = 3
	cfg.Healthy = func(context.Context) error { return nil }
	stop := e.run(cfg, f.handle)
	waitFor(t, "seq 10 applied", func() bool { s := f.seqs(); return len(s) > 0 && s[len(s)-1] == 10 })
	stop()
	if got, want := fmt.Sprint(f.seqs()), "[1 2 3 5 6 7 8 9 10]"; got != want {
		t.Errorf("applied %s, want %s (everything but the poison, in order)", got, want)
	}
	parked := e.dlq.snapshot()
	if len(parked) != 1 {
		t.Fatalf("%d messages parked, want 1: %+v", len(parked), parked)
	}
	pk := parked[0]
	env, err := events.UnmarshalEnvelope(pk.Value)
	if err != nil {
		t.Fatalf("parked bytes are not the original envelope: %v", err)
	}
	ev, err := events.Decode(env)
	if err != nil || ev.(*events.TickReceived).Seq != 4 {
		t.Fatalf("parked %v %v, want seq 4", ev, err)
	}
	if pk.Attempts != 3 || pk.Err == nil || !strings.Contains(pk.Err.Error(), "check constraint") || string(pk.Key) != "P" {
		t.Errorf("parked attempts %d, err %v, key %q; want 3 attempts, the handler's error, key P", pk.Attempts, pk.Err, pk.Key)
	}

	// The offsets moved past it: a new consumer of the group gets only what comes next.
	e.publish(envelopeMsg(t, tick("P", 11)))
	f2 := &failing{poison: func(*events.TickReceived) error { return nil }}
	e.run(cfg, f2.handle)
	waitFor(t, "seq 11 applied by a new consumer", func() bool { s := f2.seqs(); return len(s) > 0 && s[len(s)-1] == 11 })
	for _, s := range f2.seqs() {
		if s == 4 {
			t.Error("the parked message was delivered again to a new consumer of the group")
		}
	}
}

// A failure while the store does not answer (Healthy fails), or a transient one (network),
// is an outage: never parked, however often it repeats; the batch applies once it recovers.
func TestRunNeverParksDuringAnOutage(t *testing.T) {
	e := btSetup(t, 1)
	e.publish(envelopeMsg(t, tick("P", 1)), envelopeMsg(t, tick("P", 2)))
	var down atomic.Bool
	down.Store(true)
	var attempts atomic.Int32
	f := &failing{poison: func(tk *events.TickReceived) error {
		if !down.Load() {
			return nil
		}
		if attempts.Add(1)%2 == 0 {
			return &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
		}
		return errors.New("relation rm.things does not exist (the store is being restored)")
	}}
	cfg := e.runConfig(100)
	cfg.MaxAttempts = 2
	cfg.Healthy = func(context.Context) error {
		if down.Load() {
			return errors.New("store down")
		}
		return nil
	}
	stop := e.run(cfg, f.handle)
	waitFor(t, "several failed attempts", func() bool { return attempts.Load() >= 6 })
	down.Store(false)
	waitFor(t, "both applied after recovery", func() bool { return len(f.seqs()) == 2 })
	stop()
	if parked := e.dlq.snapshot(); len(parked) != 0 {
		t.Fatalf("%d messages parked during an outage: %+v", len(parked), parked)
	}
}

// Without a dead-letter topic, an undecodable message stops the consumer with an error that
// names it: it is never skipped with only a log line.
func TestRunWithoutDeadLetterStopsOnWhatItCannotRead(t *testing.T) {
	e := btSetup(t, 1)
	e.publish(rawMsg{key: "P", value: []byte("garbage")})
	cfg := e.runConfig(100)
	cfg.DeadLetter = nil
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	err := batch.Run(ctx, cfg, func(context.Context, []batch.Message) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "dead-letter") || !strings.Contains(err.Error(), "offset 0") {
		t.Fatalf("Run = %v; want an error naming the message and the missing dead-letter topic", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Run only returned when its context ended")
	}
}

// A tail started before its topic exists retries until it does, then follows it.
func TestTailRetriesUntilItsTopicExists(t *testing.T) {
	e := btSetup(t, 1)
	late := events.Topic{Name: "batchtest.late.v1", Partitions: 2, KeyedBy: "symbol", RetentionMs: -1}
	var states atomic.Int32
	var got atomic.Int32
	stop := testenv.Background(t, e.ctx, 15*time.Second, func(ctx context.Context) error {
		return batch.Tail(ctx, batch.TailConfig{Brokers: e.kcfg.Brokers, Topic: e.kcfg.Topic(late.Name), Backfill: 10, Sarama: e.kcfg.ConsumerConfig(),
			Logger: testenv.Logger(), OnState: func(err error) {
				if err != nil {
					states.Add(1)
				}
			}}, func(batch.Message) { got.Add(1) })
	})
	waitFor(t, "the tail to fail at least twice on the missing topic", func() bool { return states.Load() >= 2 })
	e.topic = late
	if err := ensure(e); err != nil {
		t.Fatal(err)
	}
	e.publish(envelopeMsg(t, tick("A", 1)), envelopeMsg(t, tick("B", 1)))
	waitFor(t, "the tail to deliver both messages", func() bool { return got.Load() >= 2 })
	stop()
}
