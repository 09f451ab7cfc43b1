package batch_test

import (
	"context"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/batch"
)

// A trailing topic's partitions are paused for TrailFor once a message of theirs arrived:
// a message appended meanwhile waits for the pause to end, while another topic's message,
// appended after it, is handed over at once; after the pause the trailing topic flows again.
func TestATrailingTopicIsFetchedOncePerTrailWhileTheOthersFlow(t *testing.T) {
	e := btSetup(t, 1)
	lead := events.Topic{Name: "batchtest-lead.v1", Partitions: 1, KeyedBy: "symbol", RetentionMs: -1}
	if err := kafka.EnsureTopics(e.ctx, e.kcfg, []events.Topic{lead}); err != nil {
		t.Fatal(err)
	}
	type arrival struct {
		symbol string
		at     time.Time
	}
	got := make(chan arrival, 16)
	handle := func(_ context.Context, msgs []batch.Message) error {
		for _, m := range msgs {
			if tk, ok := m.Event.(*events.TickReceived); ok {
				got <- arrival{tk.Symbol, time.Now()}
			}
		}
		return nil
	}
	const trailFor = 3 * time.Second
	cfg := e.runConfig(100)
	cfg.Topics = append(cfg.Topics, e.kcfg.Topic(lead.Name))
	cfg.MaxWait = batch.NoWait
	cfg.Trailing, cfg.TrailFor = []string{e.kcfg.Topic(e.topic.Name)}, trailFor
	defer e.run(cfg, handle)()

	publish := func(topic string, symbol string) {
		t.Helper()
		m := envelopeMsg(t, tick(symbol, 1))
		if err := e.pub.PublishBatch(topic, kafka.WithKey(message.NewMessage(events.NewID(), m.value), m.key)); err != nil {
			t.Fatal(err)
		}
	}
	next := func(within time.Duration) arrival {
		t.Helper()
		select {
		case a := <-got:
			return a
		case <-time.After(within):
			t.Fatalf("nothing handed over within %s", within)
			return arrival{}
		}
	}

	publish(e.topic.Name, "A") // the first after a quiet spell: it pauses the trailing topic
	a := next(30 * time.Second)
	publish(e.topic.Name, "B")
	publish(lead.Name, "C")
	first, second := next(15*time.Second), next(15*time.Second)
	if a.symbol != "A" || first.symbol != "C" || second.symbol != "B" {
		t.Fatalf("handed over %s, then %s, then %s; want A, then C (the other topic, not paused), then B (after the pause)",
			a.symbol, first.symbol, second.symbol)
	}
	if gap := second.at.Sub(a.at); gap < trailFor-500*time.Millisecond {
		t.Fatalf("B came %s after A; the trailing topic is paused for %s after A", gap, trailFor)
	}
	publish(e.topic.Name, "D") // paused again by B; it comes once that pause ends
	if d := next(15 * time.Second); d.symbol != "D" {
		t.Fatalf("handed over %s, want D", d.symbol)
	}
}
