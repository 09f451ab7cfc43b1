package kafka_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/postgres"
	"tradesvc/infra/testenv"
)

type testEvent struct {
	Key string `json:"key"`
	N   int    `json:"n"`
}

// readSide is an idempotent projection: the event id is the primary key, a redelivered
// event is ignored, and arrival records the order in which events first arrived.
type readSide struct{ pool *pgxpool.Pool }

func newReadSide(t *testing.T) readSide {
	t.Helper()
	url, _ := testenv.PGSchema(t)
	pool, err := postgres.Open(context.Background(), postgres.Config{URL: url, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE read_side (
		event_id text PRIMARY KEY, key text NOT NULL, n int NOT NULL, arrival bigserial NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return readSide{pool: pool}
}

// apply stores one event once; it reports whether this delivery was the first.
func (r readSide) apply(ctx context.Context, msg *message.Message) (bool, error) {
	var ev testEvent
	if err := json.Unmarshal(msg.Payload, &ev); err != nil {
		return false, err
	}
	if ev.Key != msg.Metadata.Get(kafka.KeyMetadata) {
		return false, fmt.Errorf("event %s: payload key %q, partition key %q", msg.UUID, ev.Key, msg.Metadata.Get(kafka.KeyMetadata))
	}
	tag, err := r.pool.Exec(ctx, `INSERT INTO read_side (event_id, key, n) VALUES ($1, $2, $3) ON CONFLICT (event_id) DO NOTHING`,
		msg.UUID, ev.Key, ev.N)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// consume runs one consumer-group member until stop says so or ctx ends, then closes it.
// It returns how many messages it received and how many were new to the read side.
func consume(ctx context.Context, t *testing.T, cfg kafka.Config, group, topic string, rs readSide, stop func(inserted int) bool) (delivered, inserted int) {
	t.Helper()
	sub, err := kafka.NewSubscriber(cfg, group, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := sub.Subscribe(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for !stop(inserted) {
		select {
		case msg, ok := <-ch:
			if !ok {
				t.Fatalf("subscription closed early after %d messages", delivered)
			}
			delivered++
			first, err := rs.apply(ctx, msg)
			if err != nil {
				t.Fatal(err)
			}
			if first {
				inserted++
			}
			msg.Ack()
		case <-ctx.Done():
			t.Fatalf("timed out after %d deliveries, %d new", delivered, inserted)
		}
	}
	// Closing commits the offsets of acked messages and leaves the group.
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
	return delivered, inserted
}

// Events published through the adapter reach an idempotent read side exactly once and in
// per-key order, even when the consumer stops midway and a new member of the same group
// takes over: the new member resumes from the committed offsets (it does not re-read the
// topic), and whatever it sees again is absorbed by the read side.
func TestPublishSubscribe_ExactlyOnceInReadSideAcrossConsumerRestart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := testConfig(t)
	topic := events.Topic{Name: "delivery.v1", Partitions: 4, KeyedBy: "login", RetentionMs: -1}
	pub := publisherOn(t, ctx, cfg, topic)
	rs := newReadSide(t)

	const keys, perKey = 10, 40
	const total = keys * perKey
	var batch []*message.Message
	for n := range perKey {
		for k := range keys {
			payload, _ := json.Marshal(testEvent{Key: fmt.Sprintf("login-%d", 1000+k), N: n})
			batch = append(batch, kafka.WithKey(message.NewMessage(watermill.NewUUID(), payload), fmt.Sprintf("login-%d", 1000+k)))
		}
		// Alternate the two paths: a batch of 50 in one call, and single-message publishes.
		if n%2 == 0 {
			for len(batch) >= 50 {
				if err := pub.PublishBatch(topic.Name, batch[:50]...); err != nil {
					t.Fatal(err)
				}
				batch = batch[50:]
			}
		} else {
			for _, m := range batch {
				if err := pub.Publish(topic.Name, m); err != nil {
					t.Fatal(err)
				}
			}
			batch = batch[:0]
		}
	}
	if err := pub.PublishBatch(topic.Name, batch...); err != nil {
		t.Fatal(err)
	}

	const group = "projection.delivery-test"
	d1, i1 := consume(ctx, t, cfg, group, topic.Name, rs, func(inserted int) bool { return inserted >= total/3 })
	d2, i2 := consume(ctx, t, cfg, group, topic.Name, rs, func(inserted int) bool { return inserted >= total-i1 })
	t.Logf("first member: %d deliveries, %d new; second member: %d deliveries, %d new", d1, i1, d2, i2)

	if i1+i2 != total {
		t.Fatalf("read side gained %d events, want %d", i1+i2, total)
	}
	if d2 >= total {
		t.Errorf("second member received %d messages: it re-read the topic instead of resuming from the group's offsets", d2)
	}
	var rows, distinct int
	if err := rs.pool.QueryRow(ctx, "SELECT count(*), count(DISTINCT (key, n)) FROM read_side").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != total || distinct != total {
		t.Fatalf("read side holds %d rows (%d distinct events), want %d", rows, distinct, total)
	}

	// Per-key order: in first-arrival order, each key's n runs 0, 1, 2, ... without gaps.
	r, err := rs.pool.Query(ctx, "SELECT key, n FROM read_side ORDER BY arrival")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	next := map[string]int{}
	for r.Next() {
		var key string
		var n int
		if err := r.Scan(&key, &n); err != nil {
			t.Fatal(err)
		}
		if n != next[key] {
			t.Fatalf("key %s: event %d arrived when %d was due", key, n, next[key])
		}
		next[key]++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

// An event without a partition key is refused before anything is sent.
func TestPublish_RefusesMessageWithoutKey(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := testConfig(t)
	topic := events.Topic{Name: "nokey.v1", Partitions: 1, RetentionMs: -1}
	pub := publisherOn(t, ctx, cfg, topic)
	err := pub.Publish(topic.Name, message.NewMessage(watermill.NewUUID(), []byte("{}")))
	if !errors.Is(err, kafka.ErrNoKey) {
		t.Fatalf("unkeyed publish: %v, want ErrNoKey", err)
	}
	if err := pub.Close(); err != nil {
		t.Fatal(err)
	}
	err = pub.Publish(topic.Name, kafka.WithKey(message.NewMessage(watermill.NewUUID(), nil), "k"))
	if !errors.Is(err, kafka.ErrPublisherClosed) {
		t.Fatalf("publish after close: %v, want ErrPublisherClosed", err)
	}
}

func TestNewSubscriber_RequiresGroup(t *testing.T) {
	t.Parallel()
	if _, err := kafka.NewSubscriber(kafka.Config{Brokers: []string{"127.0.0.1:1"}}, "", nil); err == nil {
		t.Fatal("empty consumer group accepted")
	}
}
