package kafka_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/batch"
)

// A parked message comes back from its dead-letter topic with its original key, bytes and
// headers, where it came from, who parked it and why; once marked replayed it says so.
func TestDeadLettersParkReadAndMarkReplayed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := testConfig(t)
	if err := kafka.EnsureTopics(ctx, cfg, events.AllTopics()); err != nil {
		t.Fatal(err)
	}
	clock := time.UnixMilli(1_800_000_000_000)
	dl, err := kafka.NewDeadLetters(cfg, func() time.Time { return clock })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := dl.Close(); err != nil {
			t.Error(err)
		}
	})
	source := cfg.Topic(events.TopicTrades().Name)
	logged := time.UnixMilli(1_799_999_999_000)
	parked := []batch.Parked{
		{Origin: batch.Origin{Group: cfg.Topic("projection.trading"), Topic: source, Partition: 3, Offset: 41, Key: []byte("1001"),
			Value: []byte("not json"), Headers: []*sarama.RecordHeader{{Key: []byte("origin"), Value: []byte("test")}},
			Timestamp: logged}, Err: errors.New("not an event envelope"), Attempts: 0},
		{Origin: batch.Origin{Group: cfg.Topic("projection.deals"), Topic: source, Partition: 5, Offset: 7, Key: []byte("1002"),
			Value: []byte(`{"id":"x"}`), Timestamp: logged}, Err: errors.New("check constraint"), Attempts: 5},
	}
	for _, p := range parked {
		if err := dl.Park(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	dlq := kafka.DeadLetterTopic(source)
	if dlq != cfg.Topic(events.TopicTrades().DeadLetter().Name) {
		t.Fatalf("dead-letter topic %s is not the catalogue's %s", dlq, cfg.Topic(events.TopicTrades().DeadLetter().Name))
	}
	got, err := kafka.ReadDeadLetters(ctx, cfg, []string{dlq, cfg.Topic(events.TopicTicks().DeadLetter().Name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("read %d dead letters, want 2: %+v", len(got), got)
	}
	first := got[0]
	if first.Group != parked[0].Group || first.Topic != source || first.Partition != 3 || first.Offset != 41 ||
		string(first.Key) != "1001" || string(first.Value) != "not json" || first.Error != "not an event envelope" ||
		first.Attempts != 0 || !first.Timestamp.Equal(logged) || !first.ParkedAt.Equal(clock) || first.Replayed ||
		first.DLQTopic != dlq || len(first.Headers) != 1 || string(first.Headers[0].Key) != "origin" {
		t.Errorf("first dead letter %+v", first)
	}
	if got[1].Attempts != 5 || got[1].Error != "check constraint" || got[1].Offset != 7 {
		t.Errorf("second dead letter %+v", got[1])
	}
	if m := first.Message(); m.Topic != source || m.Partition != 3 || m.Offset != 41 || string(m.Value) != "not json" {
		t.Errorf("Message() = %+v, want the original message", m)
	}

	if err := dl.MarkReplayed(ctx, got[1]); err != nil {
		t.Fatal(err)
	}
	again, err := kafka.ReadDeadLetters(ctx, cfg, []string{dlq})
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 2 || again[0].Replayed || !again[1].Replayed || !again[1].ReplayedAt.Equal(clock) {
		t.Fatalf("after marking the second replayed: %+v", again)
	}
}
