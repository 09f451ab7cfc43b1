package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
)

// TopicConfigs returns the broker-side settings of a catalogue topic: retention and
// cleanup policy. Compacted topics keep the latest message per key forever.
func TopicConfigs(t events.Topic) map[string]string {
	policy := "delete"
	if t.Compacted {
		policy = "compact"
	}
	return map[string]string{
		"retention.ms":   strconv.FormatInt(t.RetentionMs, 10),
		"cleanup.policy": policy,
	}
}

// EnsureTopics creates the catalogue topics that do not exist yet (auto-creation is off on
// our brokers, and an auto-created topic would get the wrong partition count and retention)
// and brings the retention and cleanup policy of existing ones in line with the catalogue.
// It is idempotent and safe to run from several instances at once. It refuses a topic whose
// partition count differs from the catalogue: changing it would move keys to other
// partitions and break per-account order, so it is a deliberate migration, not a start-up
// step. It returns once every partition of every topic has a leader.
func EnsureTopics(ctx context.Context, cfg Config, topics []events.Topic) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	admin, err := sarama.NewClusterAdmin(cfg.Brokers, cfg.adminConfig())
	if err != nil {
		return fmt.Errorf("kafka: cluster admin: %w", err)
	}
	defer admin.Close()

	existing, err := admin.ListTopics()
	if err != nil {
		return fmt.Errorf("kafka: list topics: %w", err)
	}
	for _, t := range topics {
		if err := ctx.Err(); err != nil {
			return err
		}
		name := cfg.Topic(t.Name)
		if t.Partitions <= 0 {
			return fmt.Errorf("kafka: topic %s: partition count %d", name, t.Partitions)
		}
		if detail, ok := existing[name]; ok {
			if err := reconcileTopic(admin, name, t, detail); err != nil {
				return err
			}
			continue
		}
		if err := createTopic(admin, cfg, name, t); err != nil {
			return err
		}
	}
	return waitForLeaders(ctx, admin, cfg, topics)
}

func createTopic(admin sarama.ClusterAdmin, cfg Config, name string, t events.Topic) error {
	entries := map[string]*string{}
	for k, v := range TopicConfigs(t) {
		entries[k] = &v
	}
	err := admin.CreateTopic(name, &sarama.TopicDetail{
		NumPartitions:     t.Partitions,
		ReplicationFactor: cfg.replicationFactor(),
		ConfigEntries:     entries,
	}, false)
	if errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return nil // another instance created it in the meantime
	}
	if err != nil {
		return fmt.Errorf("kafka: create topic %s: %w", name, err)
	}
	return nil
}

func reconcileTopic(admin sarama.ClusterAdmin, name string, t events.Topic, detail sarama.TopicDetail) error {
	if detail.NumPartitions != t.Partitions {
		return fmt.Errorf("kafka: topic %s has %d partitions, the catalogue says %d: repartitioning moves keys between partitions and is not done at start-up",
			name, detail.NumPartitions, t.Partitions)
	}
	current, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: name})
	if err != nil {
		return fmt.Errorf("kafka: describe topic %s: %w", name, err)
	}
	have := make(map[string]string, len(current))
	for _, e := range current {
		have[e.Name] = e.Value
	}
	changes := map[string]sarama.IncrementalAlterConfigsEntry{}
	for k, v := range TopicConfigs(t) {
		if have[k] != v {
			changes[k] = sarama.IncrementalAlterConfigsEntry{Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &v}
		}
	}
	if len(changes) == 0 {
		return nil
	}
	if err := admin.IncrementalAlterConfig(sarama.TopicResource, name, changes, false); err != nil {
		return fmt.Errorf("kafka: set configs of topic %s: %w", name, err)
	}
	return nil
}

// waitForLeaders polls metadata until every partition of every topic has a leader, so the
// first publish after start-up does not race the controller.
func waitForLeaders(ctx context.Context, admin sarama.ClusterAdmin, cfg Config, topics []events.Topic) error {
	names := make([]string, len(topics))
	want := make(map[string]int, len(topics))
	for i, t := range topics {
		names[i] = cfg.Topic(t.Name)
		want[names[i]] = int(t.Partitions)
	}
	for {
		metas, err := admin.DescribeTopics(names)
		if err == nil && allLed(metas, want) {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("some partitions have no leader")
			}
			return fmt.Errorf("kafka: waiting for topics %v: %w (last: %v)", names, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func allLed(metas []*sarama.TopicMetadata, want map[string]int) bool {
	if len(metas) != len(want) {
		return false
	}
	for _, m := range metas {
		if !errors.Is(m.Err, sarama.ErrNoError) || len(m.Partitions) != want[m.Name] {
			return false
		}
		for _, p := range m.Partitions {
			if !errors.Is(p.Err, sarama.ErrNoError) || p.Leader < 0 {
				return false
			}
		}
	}
	return true
}
