package kafka_test

import (
	"context"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/kafkatest"
)

// PartitionOf names the partition the producer puts a key's records on, and AppendEnvelopesAt
// says where each record landed: what a reader of the topic finds there, record for record.
// (The executor hands an outcome to its process's projection with the first before the
// append, and where it landed with the second after it.)
func TestAppenderSaysWhereEachRecordGoesAndLanded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := testConfig(t)
	topic := events.Topic{Name: "landed.v1", Partitions: 8, KeyedBy: "login", RetentionMs: -1}
	app, err := kafka.NewAppender(publisherOn(t, ctx, cfg, topic), "test", time.Now)
	if err != nil {
		t.Fatal(err)
	}

	// The executor retries an append that fails (a topic just made may not have its leaders
	// known to the producer yet); so does the test.
	appendAt := func(envs ...events.Envelope) []kafka.Position {
		t.Helper()
		for attempt := 1; ; attempt++ {
			at, err := app.AppendEnvelopesAt(ctx, topic, envs...)
			if err == nil {
				if len(at) != len(envs) {
					t.Fatalf("append %d: %d positions", len(envs), len(at))
				}
				return at
			}
			if attempt == 50 {
				t.Fatalf("append %d: %v", len(envs), err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	type landing struct {
		id     string
		want   int32 // PartitionOf
		landed kafka.Position
	}
	var all []landing
	parts := map[int32]bool{}
	for round := range 3 {
		var envs []events.Envelope
		for login := int64(1001); login <= 1016; login++ {
			ev := &events.AccountChanged{Fact: events.Fact{Seq: uint64(round*100) + uint64(login), Login: login},
				Change: events.ChangeUpdate}
			w, err := app.Wrap(ev)
			if err != nil {
				t.Fatal(err)
			}
			envs = append(envs, w...)
		}
		// One record alone (the executor's outcome decided alone), then the rest in one batch.
		at := append(appendAt(envs[0]), appendAt(envs[1:]...)...)
		for i, env := range envs {
			name, part := app.PartitionOf(topic, env.Key)
			if name != cfg.Topic(topic.Name) {
				t.Fatalf("topic %q, want %q", name, cfg.Topic(topic.Name))
			}
			all = append(all, landing{id: env.ID, want: part, landed: at[i]})
			parts[part] = true
		}
	}
	if len(parts) < 4 {
		t.Fatalf("16 logins went to %d partitions of 8: the keys do not spread", len(parts))
	}
	// Read from the oldest record once the appends are in: a reader started right after the
	// topic was made may find its partitions' leaders unknown yet.
	reader := kafkatest.Follow(t, ctx, cfg.Brokers, cfg, topic)
	recs := reader.WaitFor(30*time.Second, "every record", func(rs []kafkatest.Record) bool { return len(rs) >= len(all) })
	found := map[string]kafka.Position{}
	for _, r := range recs {
		found[r.Env.ID] = kafka.Position{Partition: r.Partition, Offset: r.Offset}
	}
	for _, l := range all {
		if l.landed.Partition != l.want {
			t.Errorf("%s: PartitionOf said %d, it landed on %d", l.id, l.want, l.landed.Partition)
		}
		if got, ok := found[l.id]; !ok || got != l.landed {
			t.Errorf("%s: AppendEnvelopesAt said %v, the topic holds it at %v (found %v)", l.id, l.landed, got, ok)
		}
	}
}
