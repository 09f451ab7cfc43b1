package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/testenv"
)

// BenchmarkPublish compares one acknowledged append per message with batches of 100 in one
// SendMessages call (ns/op and msgs/s are per message).
func BenchmarkPublish(b *testing.B) {
	cfg := kafka.Config{Brokers: testenv.Brokers(b), TopicPrefix: testenv.TopicPrefix(b), ClientID: "tradesvc-bench"}
	topic := events.Topic{Name: "bench.v1", Partitions: 8, RetentionMs: -1}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pub := publisherOn(b, ctx, cfg, topic)
	payload := make([]byte, 300) // about the size of an OrderRequested event
	newMsg := func(i int) *message.Message {
		return kafka.WithKey(message.NewMessage(watermill.NewUUID(), payload), fmt.Sprint(1000+i%50))
	}

	for _, size := range []int{1, 100} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			batch := make([]*message.Message, size)
			sent := 0
			for b.Loop() {
				for j := range batch {
					batch[j] = newMsg(sent + j)
				}
				if err := pub.PublishBatch(topic.Name, batch...); err != nil {
					b.Fatal(err)
				}
				sent += size
			}
			b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}
