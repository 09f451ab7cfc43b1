package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/IBM/sarama"
	wkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
)

// Publisher appends messages to Kafka and returns once every in-sync replica has them.
//
// It writes watermill-kafka's wire format (see Marshaler), so watermill-kafka subscribers
// read it, but it sends through sarama's SyncProducer.SendMessages instead of
// watermill-kafka's Publisher, which waits for one round trip per message: here all the
// messages of one call travel together and are acknowledged together.
//
// It implements message.Publisher; it is safe for concurrent use.
type Publisher struct {
	producer  sarama.SyncProducer
	marshaler wkafka.Marshaler
	cfg       Config
	logger    *slog.Logger

	mu     sync.RWMutex // held for reading by sends, for writing by Close
	closed bool
}

var _ message.Publisher = (*Publisher)(nil)

// ErrPublisherClosed is returned by Publish after Close.
var ErrPublisherClosed = errors.New("kafka: publisher closed")

// NewPublisher connects an idempotent producer to the cluster.
func NewPublisher(cfg Config, logger *slog.Logger) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	producer, err := sarama.NewSyncProducer(cfg.Brokers, cfg.ProducerConfig())
	if err != nil {
		return nil, fmt.Errorf("kafka: new producer: %w", err)
	}
	return &Publisher{producer: producer, marshaler: Marshaler(), cfg: cfg, logger: logger}, nil
}

// Publish appends msgs to the logical topic (the prefix is added) in one round trip; see
// PublishBatch.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	return p.PublishBatch(topic, msgs...)
}

// PublishBatch appends msgs to the logical topic in one request per partition leader and
// waits for all acknowledgements. Messages with the same key keep their order (the
// idempotent producer never reorders within a partition). On error some messages may have
// been written and others not; the error lists how many failed, and a retry of the whole
// batch is safe only for consumers that deduplicate (every consumer here does).
func (p *Publisher) PublishBatch(topic string, msgs ...*message.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	physical := p.cfg.Topic(topic)
	batch := make([]*sarama.ProducerMessage, len(msgs))
	for i, msg := range msgs {
		pm, err := p.marshaler.Marshal(physical, msg)
		if err != nil {
			return fmt.Errorf("kafka: marshal message %s for %s: %w", msg.UUID, physical, err)
		}
		batch[i] = pm
	}

	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return ErrPublisherClosed
	}
	if len(batch) == 1 {
		if _, _, err := p.producer.SendMessage(batch[0]); err != nil {
			return fmt.Errorf("kafka: publish %s to %s: %w", msgs[0].UUID, physical, err)
		}
		return nil
	}
	if err := p.producer.SendMessages(batch); err != nil {
		var perrs sarama.ProducerErrors
		if errors.As(err, &perrs) && len(perrs) > 0 {
			return fmt.Errorf("kafka: publish to %s: %d of %d messages failed, first: %w", physical, len(perrs), len(batch), perrs[0].Err)
		}
		return fmt.Errorf("kafka: publish %d messages to %s: %w", len(batch), physical, err)
	}
	return nil
}

// Close flushes and stops the producer; later publishes fail with ErrPublisherClosed.
func (p *Publisher) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	if err := p.producer.Close(); err != nil {
		return fmt.Errorf("kafka: close producer: %w", err)
	}
	return nil
}
