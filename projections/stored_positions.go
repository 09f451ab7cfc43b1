package projections

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5"

	"tradesvc/events"
)

// TopicPartition names one partition of a topic (the physical name, deployment prefix
// included).
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return fmt.Sprintf("%s/%d", tp.Topic, tp.Partition) }

// LogPositions are log positions per partition: the offset after the last message applied
// (Kafka's "next offset"), so a message was applied when its offset is below its partition's
// position. A partition that is absent has nothing applied.
type LogPositions map[TopicPartition]int64

// Applied reports whether the message at offset of topic/partition is behind the positions.
func (p LogPositions) Applied(topic string, partition int32, offset int64) bool {
	return offset < p[TopicPartition{topic, partition}]
}

// Sorted lists the positions by topic and partition.
func (p LogPositions) Sorted() []TopicPartition {
	out := make([]TopicPartition, 0, len(p))
	for tp := range p {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// Equal reports whether p and q hold the same positions (a partition at 0 counts as absent).
func (p LogPositions) Equal(q LogPositions) bool {
	for tp, n := range p {
		if q[tp] != n {
			return false
		}
	}
	for tp, n := range q {
		if p[tp] != n {
			return false
		}
	}
	return true
}

// PositionsQuerier is what StoredPositions reads the read-model database with: a pool or,
// for a reading consistent with the read models, the transaction that reads them.
type PositionsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Where StoredPositions found the positions.
const (
	// PositionsFromTable: rm.projection_offsets, written by the projection in the same
	// transaction as its read models (exact: read in the same snapshot as the rows).
	PositionsFromTable = "rm.projection_offsets"
	// PositionsFromGroup: the consumer group's committed offsets, which Kafka receives a
	// moment after the read models commit (auto-commit): exact only once the projection is
	// quiet, which callers check by reading them twice.
	PositionsFromGroup = "consumer group"
)

// StoredPositions returns the log positions projection name (a stable name, without the
// deployment prefix) has applied to its read models on topics. It reads them from
// rm.projection_offsets when the projection stores its positions there (the table exists and
// has rows for it), through q; otherwise from the projection's consumer group. This is the
// one place that knows where projections keep their positions.
func StoredPositions(ctx context.Context, src Source, q PositionsQuerier, name string, topics []events.Topic) (LogPositions, string, error) {
	if q != nil {
		pos, found, err := tablePositions(ctx, q, src.TopicPrefix, name)
		if err != nil {
			return nil, "", err
		}
		if found {
			return pos, PositionsFromTable, nil
		}
	}
	pos, err := groupPositions(src, src.TopicPrefix+name, topics)
	return pos, PositionsFromGroup, err
}

func tablePositions(ctx context.Context, q PositionsQuerier, prefix, name string) (LogPositions, bool, error) {
	rows, err := q.Query(ctx, `SELECT to_regclass('rm.projection_offsets') IS NOT NULL`)
	if err != nil {
		return nil, false, fmt.Errorf("stored positions: %w", err)
	}
	exists, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[bool])
	if err != nil || !exists {
		return nil, false, err
	}
	stored, err := tableOffsets(ctx, q, name)
	if err != nil {
		return nil, false, err
	}
	pos := LogPositions{}
	for tp, next := range stored {
		if !strings.HasPrefix(tp.Topic, prefix) {
			tp.Topic = prefix + tp.Topic // stored by logical name
		}
		pos[tp] = next
	}
	return pos, len(pos) > 0, nil
}

// tableOffsets reads every position projection name stored in rm.projection_offsets, by topic
// as stored.
func tableOffsets(ctx context.Context, q PositionsQuerier, name string) (LogPositions, error) {
	rows, err := q.Query(ctx, `SELECT topic, partition, next_offset FROM rm.projection_offsets WHERE projection = $1`, name)
	if err != nil {
		return nil, fmt.Errorf("stored positions of %s: %w", name, err)
	}
	pos := LogPositions{}
	var tp TopicPartition
	var next int64
	if _, err := pgx.ForEachRow(rows, []any{&tp.Topic, &tp.Partition, &next}, func() error {
		pos[tp] = next
		return nil
	}); err != nil {
		return nil, fmt.Errorf("stored positions of %s: %w", name, err)
	}
	return pos, nil
}

func groupPositions(src Source, group string, topics []events.Topic) (LogPositions, error) {
	client, err := sarama.NewClient(src.Brokers, src.Sarama)
	if err != nil {
		return nil, fmt.Errorf("stored positions: %w", err)
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("stored positions: %w", err)
	}
	parts := map[string][]int32{}
	for _, t := range topics {
		name := src.TopicPrefix + t.Name
		ps, err := client.Partitions(name)
		if err != nil {
			return nil, fmt.Errorf("stored positions: partitions of %s: %w", name, err)
		}
		parts[name] = ps
	}
	res, err := admin.ListConsumerGroupOffsets(group, parts)
	if err != nil {
		return nil, fmt.Errorf("stored positions: offsets of group %s: %w", group, err)
	}
	if res.Err != sarama.ErrNoError {
		return nil, fmt.Errorf("stored positions: offsets of group %s: %w", group, res.Err)
	}
	pos := LogPositions{}
	for topic, blocks := range res.Blocks {
		for partition, b := range blocks {
			if b.Err != sarama.ErrNoError {
				return nil, fmt.Errorf("stored positions: %s/%d of group %s: %w", topic, partition, group, b.Err)
			}
			if b.Offset > 0 {
				pos[TopicPartition{topic, partition}] = b.Offset
			}
		}
	}
	return pos, nil
}
