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
	reader := kafkatest.Follow(t, ctx, cfg.Brokers, cfg, topic)

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
		at, err := app.AppendEnvelopesAt(ctx, topic, envs[0])
		if err != nil || len(at) != 1 {
			t.Fatalf("append one: %v %v", at, err)
		}
		rest, err := app.AppendEnvelopesAt(ctx, topic, envs[1:]...)
		if err != nil || len(rest) != len(envs)-1 {
			t.Fatalf("append %d: %d positions, %v", len(envs)-1, len(rest), err)
		}
		at = append(at, rest...)
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
