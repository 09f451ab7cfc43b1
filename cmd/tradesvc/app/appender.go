package app

import (
	"context"
	"fmt"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"tradesvc/events"
	"tradesvc/infra/kafka"
)

// eventAppender appends catalogue events to the log: each event is wrapped in an envelope
// (the message value), keyed by its partition key, and a call's events travel in one
// acknowledged batch.
type eventAppender struct {
	pub      *kafka.Publisher
	producer string
	now      func() time.Time
}

// Append implements executor.Appender (and the command handlers' appender).
func (a *eventAppender) Append(ctx context.Context, topic events.Topic, evs ...events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	msgs := make([]*message.Message, len(evs))
	now := a.now()
	for i, e := range evs {
		env, err := events.Wrap(e, now, "", "", a.producer)
		if err != nil {
			return err
		}
		raw, err := env.Marshal()
		if err != nil {
			return fmt.Errorf("encode envelope %s: %w", env.Type, err)
		}
		msg := message.NewMessage(env.ID, raw)
		msg.SetContext(ctx)
		msgs[i] = kafka.WithKey(msg, env.Key)
	}
	return a.pub.PublishBatch(topic.Name, msgs...)
}
