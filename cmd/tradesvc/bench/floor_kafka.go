package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/batch"
)

// The floor's scratch topics (under the service's topic prefix) and the type of their
// records: a type no consumer of the service knows, so nothing else ever applies them.
const (
	floorTopicA = "bench.floor.a"
	floorTopicB = "bench.floor.b"
	floorType   = "BenchFloorHop_v1"
)

func floorTopic(name string) events.Topic {
	return events.Topic{Name: name, Partitions: 1, KeyedBy: "login", RetentionMs: int64(time.Hour / time.Millisecond)}
}

// floorPayload is about the size of an order command, so the hop carries what an order does.
func floorPayload(id string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"operationId": id, "login": 1001, "apiKeyId": 1, "clientOrderId": id,
		"symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01", "respType": "ACK", "tag": "#abcdef",
		"requestedAt": time.Now().UnixMilli(), "quote": map[string]any{"bid": "60000.00", "ask": "60010.00",
			"time": time.Now().UnixMilli()}})
	return b
}

// floorKafka times n chained hops: a record appended to topic A by the service's idempotent
// producer (acks from every in-sync replica), consumed there by a batch consumer with the
// settings of the executor (no batch wait), which appends the next record to topic B on
// receipt, consumed the same way; one sample is the first append to the arrival at B, each
// gap after the previous one arrived (0: back to back).
// The consumer groups are this run's own and are deleted afterwards.
func floorKafka(ctx context.Context, kcfg kafka.Config, runID string, n int, gap time.Duration) (Summary, error) {
	kcfg.ClientID = "tradesvc-bench"
	if err := kafka.EnsureTopics(ctx, kcfg, []events.Topic{floorTopic(floorTopicA), floorTopic(floorTopicB)}); err != nil {
		return Summary{}, err
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	pub, err := kafka.NewPublisher(kcfg, logger)
	if err != nil {
		return Summary{}, err
	}
	defer pub.Close()
	ap, err := kafka.NewAppender(pub, "tradesvc-bench", time.Now)
	if err != nil {
		return Summary{}, err
	}
	groupA, groupB := floorTopicA+"."+runID, floorTopicB+"."+runID
	defer deleteGroups(kcfg, groupA, groupB)

	arrived := make(chan string, 64)
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	consume := func(group, topic string, h batch.Handler) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = batch.Run(runCtx, batch.Config{Brokers: kcfg.Brokers, Group: kcfg.Topic(group), Topics: []string{kcfg.Topic(topic)},
				MaxWait: batch.NoWait, Sarama: kcfg.ConsumerConfig(), Logger: logger}, h)
		}()
	}
	ours := func(m batch.Message) bool {
		return m.Envelope.Type == floorType && strings.HasPrefix(m.Envelope.CorrelationID, runID+"-")
	}
	consume(groupA, floorTopicA, func(ctx context.Context, msgs []batch.Message) error {
		var next []events.Envelope
		for _, m := range msgs {
			if ours(m) {
				next = append(next, hop(m.Envelope.CorrelationID, m.Envelope.ID))
			}
		}
		return ap.AppendEnvelopes(ctx, floorTopic(floorTopicB), next...)
	})
	consume(groupB, floorTopicB, func(_ context.Context, msgs []batch.Message) error {
		for _, m := range msgs {
			if !ours(m) {
				continue
			}
			select {
			case arrived <- m.Envelope.CorrelationID:
			case <-runCtx.Done():
				return runCtx.Err()
			}
		}
		return nil
	})
	defer func() { stop(); wg.Wait() }()

	one := func(i int) (time.Duration, error) {
		id := runID + "-" + strconv.Itoa(i)
		t0 := time.Now()
		if err := ap.AppendEnvelopes(ctx, floorTopic(floorTopicA), hop(id, "")); err != nil {
			return 0, err
		}
		timeout := time.NewTimer(30 * time.Second) // the first waits for both groups to join
		defer timeout.Stop()
		for {
			select {
			case got := <-arrived:
				if got == id {
					return time.Since(t0), nil
				}
			case <-timeout.C:
				return 0, fmt.Errorf("hop %d did not arrive within 30 s", i)
			case <-ctx.Done():
				return 0, ctx.Err()
			}
		}
	}
	lat := make([]time.Duration, 0, n)
	for i := -5; i < n; i++ {
		if i > -5 { // the first waits for both groups to join
			if err := pause(ctx, gap); err != nil {
				return Summary{}, err
			}
		}
		d, err := one(i)
		if err != nil {
			return Summary{}, err
		}
		if i >= 0 {
			lat = append(lat, d)
		}
	}
	return Summarize(lat), nil
}

// hop is a floor record of hop id, caused by the record causation ("" for the first).
func hop(id, causation string) events.Envelope {
	return events.Envelope{ID: events.NewID(), Type: floorType, OccurredAt: time.Now().UnixMilli(), Key: "1001",
		CorrelationID: id, CausationID: causation, Producer: "tradesvc-bench", Payload: floorPayload(id)}
}

// deleteGroups removes the run's consumer groups (best effort: a group still emptying is
// retried for a few seconds, and what remains expires with the broker's offset retention).
func deleteGroups(kcfg kafka.Config, groups ...string) {
	sc := sarama.NewConfig()
	sc.Version = kafka.ProtocolVersion()
	sc.ClientID = "tradesvc-bench"
	admin, err := sarama.NewClusterAdmin(kcfg.Brokers, sc)
	if err != nil {
		return
	}
	defer admin.Close()
	for _, g := range groups {
		for attempt := 0; attempt < 10; attempt++ {
			err := admin.DeleteConsumerGroup(kcfg.Topic(g))
			if err == nil || errors.Is(err, sarama.ErrGroupIDNotFound) {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}
