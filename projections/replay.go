package projections

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
)

// Resetter is implemented by projections that can empty their read model before a replay.
type Resetter interface {
	Reset(ctx context.Context) error
}

// Replay rebuilds projection p from the beginning of its topics: it empties the read model,
// then consumes every message up to the end of the log as it stood when the replay began,
// under a fresh consumer group so the live projection's position is untouched. A live
// projector may keep running meanwhile: every projection applies events idempotently and
// only moves rows forward, so both converge on the same state. It returns how many events
// were applied.
func Replay(ctx context.Context, src Source, name string, p Projection) (int, error) {
	r, ok := p.(Resetter)
	if !ok {
		return 0, fmt.Errorf("projection %s cannot be reset", name)
	}
	targets, err := endOffsets(src, p)
	if err != nil {
		return 0, err
	}
	if err := r.Reset(ctx); err != nil {
		return 0, fmt.Errorf("reset %s: %w", name, err)
	}
	return replayTo(ctx, src, name, "replay", p, targets)
}

// ReplayUpTo applies to p, which the caller has emptied (a scratch read model), every
// message of its topics before targets and nothing after: the state of a projection that
// stopped at those positions (`tradesvc replay --verify` rebuilds the positions the live
// projection stored). It consumes under a throw-away consumer group, as Replay does, and
// returns how many events were applied.
func ReplayUpTo(ctx context.Context, src Source, name string, p Projection, targets LogPositions) (int, error) {
	return replayTo(ctx, src, name, "verify", p, targets)
}

// replayTo consumes p's topics under the group <name>.<purpose>.<now> and applies every
// message below its partition's target, until each partition reached its target; the
// group is deleted afterwards.
func replayTo(ctx context.Context, src Source, name, purpose string, p Projection, targets LogPositions) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	applied := 0
	reached := LogPositions{}
	done := func() bool {
		for tp, end := range targets {
			if reached[tp] < end {
				return false
			}
		}
		return true
	}
	if done() {
		return 0, nil
	}
	replayName := fmt.Sprintf("%s.%s.%d", name, purpose, time.Now().UnixNano())
	defer deleteGroup(src, src.TopicPrefix+replayName)
	err := Run(ctx, src, replayName, projectionFunc{topics: p, apply: func(ctx context.Context, msgs []batch.Message) error {
		within := msgs[:0:0]
		for _, m := range msgs {
			if m.Offset < targets[TopicPartition{m.Topic, m.Partition}] {
				within = append(within, m)
			}
		}
		if len(within) > 0 {
			if err := p.Apply(ctx, within); err != nil {
				return err
			}
		}
		mu.Lock()
		defer mu.Unlock()
		applied += len(within)
		for _, m := range msgs {
			tp := TopicPartition{m.Topic, m.Partition}
			reached[tp] = max(reached[tp], m.Offset+1)
		}
		if done() {
			cancel()
		}
		return nil
	}})
	if err != nil && !errors.Is(err, context.Canceled) {
		return applied, err
	}
	mu.Lock()
	defer mu.Unlock()
	if !done() {
		return applied, fmt.Errorf("replay of %s stopped before the end of the log: %w", name, context.Cause(ctx))
	}
	return applied, nil
}

// deleteGroup removes a throw-away consumer group once its consumer has stopped (best
// effort: a group left behind only takes a little room on the broker).
func deleteGroup(src Source, group string) {
	admin, err := sarama.NewClusterAdmin(src.Brokers, src.Sarama)
	if err != nil {
		src.Logger.Warn("delete a replay's consumer group", "group", group, "err", err)
		return
	}
	defer admin.Close()
	if err := admin.DeleteConsumerGroup(group); err != nil {
		src.Logger.Warn("delete a replay's consumer group", "group", group, "err", err)
	}
}

type projectionFunc struct {
	topics Projection
	apply  func(ctx context.Context, msgs []batch.Message) error
}

func (f projectionFunc) Topics() []events.Topic { return f.topics.Topics() }

// Accepts passes on what the wrapped projection applies (everything when it does not say),
// so a rebuild decodes no more than the live projection does.
func (f projectionFunc) Accepts(eventType string) bool {
	if a, ok := f.topics.(Accepting); ok {
		return a.Accepts(eventType)
	}
	return true
}

func (f projectionFunc) Apply(ctx context.Context, msgs []batch.Message) error {
	return f.apply(ctx, msgs)
}

// endOffsets returns, per partition, the offset just past the last message now.
func endOffsets(src Source, p Projection) (LogPositions, error) {
	client, err := sarama.NewClient(src.Brokers, src.Sarama)
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	defer client.Close()
	out := LogPositions{}
	for _, t := range p.Topics() {
		topic := src.TopicPrefix + t.Name
		parts, err := client.Partitions(topic)
		if err != nil {
			return nil, fmt.Errorf("replay: partitions of %s: %w", topic, err)
		}
		for _, part := range parts {
			start, end, err := batch.Bounds(client, topic, part)
			if err != nil {
				return nil, fmt.Errorf("replay: %w", err)
			}
			if end > start {
				out[TopicPartition{topic, part}] = end
			}
		}
	}
	return out, nil
}
