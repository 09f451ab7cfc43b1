package projections

import (
	"context"
	"log/slog"

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

// Source says where projections read from.
type Source struct {
	Brokers     []string
	TopicPrefix string
	Sarama      *sarama.Config
	Logger      *slog.Logger
}

// Run consumes for projection p under its stable consumer-group name until ctx ends.
func Run(ctx context.Context, src Source, name string, p Projection) error {
	topics := make([]string, 0, len(p.Topics()))
	for _, t := range p.Topics() {
		topics = append(topics, src.TopicPrefix+t.Name)
	}
	return batch.Run(ctx, batch.Config{
		Brokers: src.Brokers,
		Group:   src.TopicPrefix + name,
		Topics:  topics,
		Sarama:  src.Sarama,
		Logger:  src.Logger.With("projection", name),
	}, p.Apply)
}
