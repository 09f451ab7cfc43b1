package batch

import (
	"context"
	"fmt"
	"sync"

	"github.com/IBM/sarama"
)

// TailConfig configures Tail.
type TailConfig struct {
	Brokers []string
	Topic   string
	// Backfill is how many messages per partition before the newest to start from, so that
	// an in-memory projection starts warm (latest quotes) instead of empty.
	Backfill int64
	Sarama   *sarama.Config
}

// Tail follows every partition of a topic outside any consumer group (every process that
// holds an in-memory projection sees every message) and calls handle for each message, in
// order per partition, until ctx ends. handle is called from one goroutine per partition.
func Tail(ctx context.Context, cfg TailConfig, handle func(Message)) error {
	if cfg.Sarama == nil || len(cfg.Brokers) == 0 || cfg.Topic == "" {
		return fmt.Errorf("batch: tail needs brokers, topic and sarama config")
	}
	client, err := sarama.NewClient(cfg.Brokers, cfg.Sarama)
	if err != nil {
		return fmt.Errorf("batch: tail %s: %w", cfg.Topic, err)
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return fmt.Errorf("batch: tail %s: %w", cfg.Topic, err)
	}
	defer consumer.Close()
	partitions, err := client.Partitions(cfg.Topic)
	if err != nil {
		return fmt.Errorf("batch: tail %s partitions: %w", cfg.Topic, err)
	}
	g := &groupHandler{cfg: Config{Logger: defaultLogger()}}
	// Open every partition before following any, so that a failure leaves nothing running.
	pcs := make([]sarama.PartitionConsumer, 0, len(partitions))
	closeAll := func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
	}
	for _, p := range partitions {
		start, err := tailStart(client, cfg, p)
		if err != nil {
			closeAll()
			return err
		}
		pc, err := consumer.ConsumePartition(cfg.Topic, p, start)
		if err != nil {
			closeAll()
			return fmt.Errorf("batch: tail %s/%d: %w", cfg.Topic, p, err)
		}
		pcs = append(pcs, pc)
	}
	var wg sync.WaitGroup
	for _, pc := range pcs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer pc.Close()
			for {
				select {
				case <-ctx.Done():
					return
				case m, ok := <-pc.Messages():
					if !ok {
						return
					}
					for _, msg := range g.decode([]*sarama.ConsumerMessage{m}) {
						handle(msg)
					}
				}
			}
		}()
	}
	wg.Wait()
	return nil
}

// tailStart is the offset Backfill messages before the newest of partition p, or its oldest.
func tailStart(client sarama.Client, cfg TailConfig, p int32) (int64, error) {
	newest, err := client.GetOffset(cfg.Topic, p, sarama.OffsetNewest)
	if err != nil {
		return 0, fmt.Errorf("batch: tail %s/%d offset: %w", cfg.Topic, p, err)
	}
	oldest, err := client.GetOffset(cfg.Topic, p, sarama.OffsetOldest)
	if err != nil {
		return 0, fmt.Errorf("batch: tail %s/%d offset: %w", cfg.Topic, p, err)
	}
	return max(newest-cfg.Backfill, oldest), nil
}
