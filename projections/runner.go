package projections

import (
	"context"
	"log/slog"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
)

// Projection is a consumer of the log that applies batches to a read model.
type Projection interface {
	// Topics the projection reads.
	Topics() []events.Topic
	// Apply applies one batch of one partition, idempotently.
	Apply(ctx context.Context, msgs []batch.Message) error
}

// Batching is implemented by projections that want batches gathered for longer than the
// consumer's default (50 ms), such as ClickHouse tables, which want few large inserts.
type Batching interface {
	// MaxWait is how long a batch may wait to fill once it has a message.
	MaxWait() time.Duration
}

// Source says where projections read from.
type Source struct {
	Brokers     []string
	TopicPrefix string
	Sarama      *sarama.Config
	Logger      *slog.Logger
	// OnBatch, when set, is told of every batch a projection applied or failed (metrics).
	OnBatch func(projection, topic string, partition int32, events int, lastOffset int64, err error)
}

// Run consumes for projection p under its stable consumer-group name until ctx ends.
func Run(ctx context.Context, src Source, name string, p Projection) error {
	topics := make([]string, 0, len(p.Topics()))
	for _, t := range p.Topics() {
		topics = append(topics, src.TopicPrefix+t.Name)
	}
	var wait time.Duration
	if b, ok := p.(Batching); ok {
		wait = b.MaxWait()
	}
	var onBatch func(string, int32, int, int64, error)
	if src.OnBatch != nil {
		onBatch = func(topic string, partition int32, events int, lastOffset int64, err error) {
			src.OnBatch(name, topic, partition, events, lastOffset, err)
		}
	}
	return batch.Run(ctx, batch.Config{
		OnBatch:  onBatch,
		Brokers:  src.Brokers,
		Group:    src.TopicPrefix + name,
		Topics:   topics,
		MaxBatch: 5000,
		MaxWait:  wait,
		Sarama:   src.Sarama,
		Logger:   src.Logger.With("projection", name),
	}, p.Apply)
}
