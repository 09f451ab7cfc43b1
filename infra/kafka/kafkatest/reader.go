// Package kafkatest reads topics back in integration tests: a Reader follows every partition
// of a topic from its oldest offset, outside any consumer group, and keeps what it read.
package kafkatest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
	"tradesvc/infra/kafka"
)

// Record is one message read back from a topic.
type Record struct {
	Partition int32
	Offset    int64
	Key       string
	Env       events.Envelope
	// Event is the decoded payload (nil when undecodable or of an unknown type).
	Event events.Event
}

// Reader keeps what it read of one topic, in offset order per partition.
type Reader struct {
	t    testing.TB
	name string
	mu   sync.Mutex
	recs []Record
}

// Follow starts reading topic (its physical name under kcfg's prefix) until the test ends.
func Follow(t testing.TB, ctx context.Context, brokers []string, kcfg kafka.Config, topic events.Topic) *Reader {
	t.Helper()
	r := &Reader{t: t, name: kcfg.Topic(topic.Name)}
	client, err := sarama.NewClient(brokers, kcfg.ConsumerConfig())
	if err != nil {
		t.Fatal(err)
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait(); consumer.Close(); client.Close() })
	for p := int32(0); p < topic.Partitions; p++ {
		pc, err := consumer.ConsumePartition(r.name, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer pc.Close()
			for {
				select {
				case <-ctx.Done():
					return
				case m, ok := <-pc.Messages():
					if !ok {
						return
					}
					rec := Record{Partition: m.Partition, Offset: m.Offset, Key: string(m.Key)}
					if env, err := events.UnmarshalEnvelope(m.Value); err == nil {
						rec.Env = env
						rec.Event, _ = events.Decode(env)
					}
					r.mu.Lock()
					r.recs = append(r.recs, rec)
					r.mu.Unlock()
				}
			}
		}()
	}
	return r
}

// Snapshot returns what was read so far.
func (r *Reader) Snapshot() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.recs...)
}

// WaitFor polls until cond holds on what was read, failing the test after d.
func (r *Reader) WaitFor(d time.Duration, what string, cond func([]Record) bool) []Record {
	r.t.Helper()
	deadline := time.Now().Add(d)
	for {
		recs := r.Snapshot()
		if cond(recs) {
			return recs
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: not seen on %s within %s (%d messages read)", what, r.name, d, len(recs))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
