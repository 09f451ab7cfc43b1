package kafka

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"
	wkafka "github.com/ThreeDotsLabs/watermill-kafka/v3/pkg/kafka"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/eapache/go-resiliency/breaker"
)

// Publisher appends messages to Kafka and returns once every in-sync replica has them.
//
// It writes watermill-kafka's wire format (see Marshaler), so watermill-kafka subscribers
// read it, but it sends through sarama's SyncProducer.SendMessages instead of
// watermill-kafka's Publisher, which waits for one round trip per message: here all the
// messages of one call travel together and are acknowledged together.
//
// After an outage sarama keeps a producer from sending for up to 10 s once the cluster is
// back: each partition's leader lookup sits behind a circuit breaker (3 failures, then open
// for 10 s) that no setting changes. A send refused by an open breaker makes the Publisher
// replace its producer (at most once a second), so appends resume as soon as the cluster
// answers.
//
// It implements message.Publisher; it is safe for concurrent use.
type Publisher struct {
	producer  sarama.SyncProducer
	marshaler wkafka.Marshaler
	cfg       Config
	logger    *slog.Logger

	mu     sync.RWMutex // held for reading by sends, for writing by Close and renew
	closed bool

	renewMu   sync.Mutex // one renewal at a time
	renewedAt time.Time
}

// renewInterval is the least time between two replacements of the producer.
const renewInterval = time.Second

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
	_, err := p.publish(topic, msgs)
	return err
}

// Position is where a record landed in its topic.
type Position struct {
	Partition int32
	Offset    int64
}

// PublishAt appends msgs to the logical topic, like PublishBatch, and returns where each of
// them landed.
func (p *Publisher) PublishAt(topic string, msgs ...*message.Message) ([]Position, error) {
	sent, err := p.publish(topic, msgs)
	if err != nil {
		return nil, err
	}
	out := make([]Position, len(sent))
	for i, m := range sent {
		out[i] = Position{Partition: m.Partition, Offset: m.Offset}
	}
	return out, nil
}

// publish appends msgs and returns them as sent (each with its partition and offset).
func (p *Publisher) publish(topic string, msgs []*message.Message) ([]*sarama.ProducerMessage, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	physical := p.cfg.Topic(topic)
	batch := make([]*sarama.ProducerMessage, len(msgs))
	for i, msg := range msgs {
		pm, err := p.marshaler.Marshal(physical, msg)
		if err != nil {
			return nil, fmt.Errorf("kafka: marshal message %s for %s: %w", msg.UUID, physical, err)
		}
		batch[i] = pm
	}

	producer, err := p.send(batch)
	if err == nil {
		return batch, nil
	}
	var perrs sarama.ProducerErrors
	if errors.As(err, &perrs) && len(perrs) > 0 {
		err = fmt.Errorf("kafka: publish to %s: %d of %d messages failed, first: %w", physical, len(perrs), len(batch), perrs[0].Err)
	} else if len(batch) == 1 {
		err = fmt.Errorf("kafka: publish %s to %s: %w", msgs[0].UUID, physical, err)
	} else {
		err = fmt.Errorf("kafka: publish %d messages to %s: %w", len(batch), physical, err)
	}
	if errors.Is(err, breaker.ErrBreakerOpen) {
		p.renew(producer)
	}
	return nil, err
}

// send sends batch with the current producer, which it returns.
func (p *Publisher) send(batch []*sarama.ProducerMessage) (sarama.SyncProducer, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return nil, ErrPublisherClosed
	}
	if len(batch) == 1 {
		_, _, err := p.producer.SendMessage(batch[0]) // it sets the message's partition and offset
		return p.producer, err
	}
	return p.producer, p.producer.SendMessages(batch)
}

// renew replaces failed, the producer a send found behind an open circuit breaker, with a
// new one (fresh breakers). While the cluster is still unreachable the new producer cannot
// be built and failed stays: the next refused send tries again.
func (p *Publisher) renew(failed sarama.SyncProducer) {
	p.renewMu.Lock()
	defer p.renewMu.Unlock()
	if time.Since(p.renewedAt) < renewInterval {
		return
	}
	p.renewedAt = time.Now()
	fresh, err := sarama.NewSyncProducer(p.cfg.Brokers, p.cfg.ProducerConfig())
	if err != nil {
		p.logger.Warn("kafka: producer behind an open circuit breaker; a new one cannot connect yet", "err", err)
		return
	}
	p.mu.Lock()
	if p.closed || p.producer != failed {
		p.mu.Unlock()
		_ = fresh.Close()
		return
	}
	p.producer = fresh
	p.mu.Unlock() // no send holds failed any more: sends use the producer under the read lock
	p.logger.Info("kafka: producer replaced after an outage (its circuit breaker was open)")
	if err := failed.Close(); err != nil {
		p.logger.Warn("kafka: close the replaced producer", "err", err)
	}
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
