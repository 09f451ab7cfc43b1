package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"tradesvc/infra/wait"

	"github.com/IBM/sarama"
	"golang.org/x/sync/errgroup"
)

// TailConfig configures Tail.
type TailConfig struct {
	Brokers []string
	Topic   string
	// Backfill is how many messages per partition before the newest to start from, so that
	// an in-memory projection starts warm (latest quotes) instead of empty. A reconnection
	// backfills again; the handler must ignore what it has seen.
	Backfill int64
	// BackfillFor, when set, starts each partition early enough to also hold the messages of
	// that long before now (by their timestamps), when that is more than Backfill messages: a
	// reader that resumes from a store lagging the topic (the kline seed from ClickHouse's
	// bars) then gets every message the store lacks, whatever the rate.
	BackfillFor time.Duration
	Sarama      *sarama.Config
	// Logger receives reconnections and undecodable messages (default slog.Default()).
	Logger *slog.Logger
	// OnState, when set, is told when the tail follows the topic (err nil) and when it lost
	// it and is reconnecting (err says why): readiness and metrics.
	OnState func(err error)
	// OnUndecodable, when set, is told of a message the tail cannot decode. The tail is no
	// consumer group and parks nothing: the consumer groups of the same topic (the
	// projections) park it; the tail only counts it (metrics) and logs it.
	OnUndecodable func(topic string, partition int32, offset int64, err error)
}

// Tail follows every partition of a topic outside any consumer group (every process that
// holds an in-memory projection sees every message) and calls handle for each message, in
// order per partition, until ctx ends. handle is called from one goroutine per partition.
// A failure (Kafka unreachable at start, a partition consumer's error) closes everything
// and starts over after a backoff, like Run; Tail returns nil when ctx ends, and an error
// only for a bad configuration.
func Tail(ctx context.Context, cfg TailConfig, handle func(Message)) error {
	if cfg.Sarama == nil || len(cfg.Brokers) == 0 || cfg.Topic == "" {
		return fmt.Errorf("batch: tail needs brokers, topic and sarama config")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.OnState == nil {
		cfg.OnState = func(error) {}
	}
	sc := *cfg.Sarama
	sc.Consumer.Return.Errors = true // a partition consumer's error restarts the tail
	for attempt := 1; ctx.Err() == nil; attempt++ {
		delivered, err := tailOnce(ctx, cfg, &sc, handle)
		if ctx.Err() != nil {
			break
		}
		if delivered {
			attempt = 1
		}
		cfg.OnState(err)
		cfg.Logger.Warn("tail lost its topic; reconnecting", "topic", cfg.Topic, "attempt", attempt, "err", err)
		_ = wait.For(ctx, reconnectDelay(attempt))
	}
	return nil
}

// tailOnce follows the topic until ctx ends or something fails; delivered says whether any
// message was handed over (the session was healthy for a while).
func tailOnce(ctx context.Context, cfg TailConfig, sc *sarama.Config, handle func(Message)) (delivered bool, err error) {
	client, err := sarama.NewClient(cfg.Brokers, sc)
	if err != nil {
		return false, fmt.Errorf("batch: tail %s: %w", cfg.Topic, err)
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return false, fmt.Errorf("batch: tail %s: %w", cfg.Topic, err)
	}
	defer consumer.Close()
	partitions, err := client.Partitions(cfg.Topic)
	if err != nil {
		return false, fmt.Errorf("batch: tail %s partitions: %w", cfg.Topic, err)
	}
	// Open every partition before following any, so that a failure leaves nothing running.
	pcs := make([]sarama.PartitionConsumer, 0, len(partitions))
	defer func() {
		for _, pc := range pcs {
			if cerr := pc.Close(); cerr != nil && err == nil && ctx.Err() == nil {
				err = cerr
			}
		}
	}()
	for _, p := range partitions {
		start, err := tailStart(client, cfg, p)
		if err != nil {
			return false, err
		}
		pc, err := consumer.ConsumePartition(cfg.Topic, p, start)
		if err != nil {
			return false, fmt.Errorf("batch: tail %s/%d: %w", cfg.Topic, p, err)
		}
		pcs = append(pcs, pc)
	}
	cfg.OnState(nil)
	var got atomicFlag
	g, gctx := errgroup.WithContext(ctx)
	for _, pc := range pcs {
		g.Go(func() error {
			for {
				select {
				case <-gctx.Done():
					return nil
				case cerr, ok := <-pc.Errors():
					if !ok {
						return errors.New("partition consumer closed")
					}
					return fmt.Errorf("batch: tail %s/%d: %w", cerr.Topic, cerr.Partition, cerr.Err)
				case m, ok := <-pc.Messages():
					if !ok {
						return errors.New("partition consumer closed")
					}
					got.set()
					msg, derr := Decode(m)
					if derr != nil {
						cfg.Logger.Error("tail: undecodable message (the projections of this topic park it)",
							"topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", derr)
						if cfg.OnUndecodable != nil {
							cfg.OnUndecodable(m.Topic, m.Partition, m.Offset, derr)
						}
						continue
					}
					handle(msg)
				}
			}
		})
	}
	err = g.Wait()
	return got.get(), err
}

// tailStart is the offset Backfill messages before the newest of partition p, or the first
// of the last BackfillFor when that is earlier, or its oldest.
func tailStart(client sarama.Client, cfg TailConfig, p int32) (int64, error) {
	oldest, end, err := Bounds(client, cfg.Topic, p)
	if err != nil {
		return 0, fmt.Errorf("batch: tail: %w", err)
	}
	start := max(end-cfg.Backfill, oldest)
	if cfg.BackfillFor > 0 {
		// The first offset whose timestamp is at or after the time; -1 (OffsetNewest) when
		// no message is that recent.
		at, err := client.GetOffset(cfg.Topic, p, time.Now().Add(-cfg.BackfillFor).UnixMilli())
		if err != nil {
			return 0, fmt.Errorf("batch: tail: offset of %s/%d %v ago: %w", cfg.Topic, p, cfg.BackfillFor, err)
		}
		if at >= 0 && at < start {
			start = max(at, oldest)
		}
	}
	return start, nil
}

// Bounds returns the offset range a partition holds now: its oldest message's offset and the
// offset just past its newest (equal when it holds none).
func Bounds(client sarama.Client, topic string, part int32) (oldest, end int64, err error) {
	if oldest, err = client.GetOffset(topic, part, sarama.OffsetOldest); err != nil {
		return 0, 0, fmt.Errorf("start of %s/%d: %w", topic, part, err)
	}
	if end, err = client.GetOffset(topic, part, sarama.OffsetNewest); err != nil {
		return 0, 0, fmt.Errorf("end of %s/%d: %w", topic, part, err)
	}
	return oldest, end, nil
}

// atomicFlag is a set-once flag shared by the partition goroutines.
type atomicFlag struct{ v atomic.Bool }

func (f *atomicFlag) set()      { f.v.Store(true) }
func (f *atomicFlag) get() bool { return f.v.Load() }
