package kafka

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/ThreeDotsLabs/watermill"
	wkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// Subscriber consumes logical topics in one consumer group (watermill-kafka over a sarama
// consumer group). Each partition is delivered in order and the next message of a partition
// comes only after the previous one is acked, so per-key order holds for a handler that acks
// in order. Delivery is at-least-once: after a restart or a rebalance, messages acked since
// the last offset commit (every second, and on Close) come again, so handlers deduplicate.
//
// It implements message.Subscriber.
type Subscriber struct {
	inner *wkafka.Subscriber
	cfg   Config
}

var _ message.Subscriber = (*Subscriber)(nil)

// NewSubscriber creates a subscriber in consumerGroup (a logical name; the prefix is
// added). A group's name is its position in the log: one stable name per projection or
// consumer, never shared between two of them, and never renamed casually (a new name
// re-reads the topic from the beginning).
func NewSubscriber(cfg Config, consumerGroup string, logger *slog.Logger) (*Subscriber, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if consumerGroup == "" {
		// watermill would then read every partition without a group and commit nothing.
		return nil, errors.New("kafka: consumer group is empty")
	}
	if logger == nil {
		logger = slog.Default()
	}
	inner, err := wkafka.NewSubscriber(wkafka.SubscriberConfig{
		Brokers:               cfg.Brokers,
		Unmarshaler:           Marshaler(),
		OverwriteSaramaConfig: cfg.ConsumerConfig(),
		ConsumerGroup:         cfg.Topic(consumerGroup),
	}, watermill.NewSlogLogger(logger.With("consumer_group", consumerGroup)))
	if err != nil {
		return nil, fmt.Errorf("kafka: new subscriber %s: %w", consumerGroup, err)
	}
	return &Subscriber{inner: inner, cfg: cfg}, nil
}

// Subscribe starts consuming the logical topic. The channel closes when ctx is cancelled or
// the subscriber is closed. The partition key is in each message's KeyMetadata; partition and
// offset are in its context (watermill-kafka's MessagePartitionFromCtx, MessagePartitionOffsetFromCtx).
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	ch, err := s.inner.Subscribe(ctx, s.cfg.Topic(topic))
	if err != nil {
		return nil, fmt.Errorf("kafka: subscribe %s: %w", s.cfg.Topic(topic), err)
	}
	return ch, nil
}

// Close stops every subscription, commits the offsets of acked messages and leaves the
// group, so another member takes the partitions over at once.
func (s *Subscriber) Close() error {
	if err := s.inner.Close(); err != nil {
		return fmt.Errorf("kafka: close subscriber: %w", err)
	}
	return nil
}
