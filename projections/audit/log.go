package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"golang.org/x/sync/errgroup"

	"tradesvc/infra/kafka/batch"
)

// Log reads the topics of one deployment directly, partition by partition, outside any
// consumer group: an audit changes nothing and leaves nothing behind on the brokers.
type Log struct {
	client   sarama.Client
	consumer sarama.Consumer
	prefix   string
}

// OpenLog connects to the brokers; prefix is the deployment's topic prefix.
func OpenLog(brokers []string, prefix string, cfg *sarama.Config) (*Log, error) {
	sc := *cfg
	sc.Consumer.Return.Errors = true
	client, err := sarama.NewClient(brokers, &sc)
	if err != nil {
		return nil, fmt.Errorf("audit: connect to Kafka: %w", err)
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("audit: %w", err)
	}
	return &Log{client: client, consumer: consumer, prefix: prefix}, nil
}

// Close releases the connections.
func (l *Log) Close() error { return errors.Join(l.consumer.Close(), l.client.Close()) }

// topic is the physical name of a logical topic.
func (l *Log) topic(name string) string { return l.prefix + name }

// partitionsOf returns the partitions of topic holding the given logins (the producer's hash
// of the key, as every event of the trading topics is keyed by login), or all of them when
// logins is empty.
func (l *Log) partitionsOf(topic string, logins []int64) ([]int32, error) {
	all, err := l.client.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("audit: partitions of %s: %w", topic, err)
	}
	if len(logins) == 0 {
		return all, nil
	}
	hash := sarama.NewHashPartitioner(topic)
	seen := map[int32]bool{}
	var out []int32
	for _, login := range logins {
		p, err := hash.Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(strconv.FormatInt(login, 10))}, int32(len(all)))
		if err != nil {
			return nil, fmt.Errorf("audit: partition of login %d: %w", login, err)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// window bounds a scan by record time; zero ends are open.
type window struct{ from, to time.Time }

// scan reads partitions of topic within w and decodes the messages keep accepts (keep looks
// at the raw record, so that the envelopes an audit does not need are never decoded).
func (l *Log) scan(ctx context.Context, topic string, partitions []int32, w window,
	keep func(m *sarama.ConsumerMessage) bool) ([]Record, error) {
	var mu sync.Mutex
	var out []Record
	g, ctx := errgroup.WithContext(ctx)
	for _, p := range partitions {
		g.Go(func() error {
			recs, err := l.scanPartition(ctx, topic, p, w, keep)
			mu.Lock()
			out = append(out, recs...)
			mu.Unlock()
			return err
		})
	}
	return out, g.Wait()
}

// idleEnd is how long a partition may deliver nothing before its scan ends short of the
// offset it aimed at (a gap in the offsets: nothing more will come).
const idleEnd = 5 * time.Second

func (l *Log) scanPartition(ctx context.Context, topic string, p int32, w window,
	keep func(m *sarama.ConsumerMessage) bool) ([]Record, error) {
	start, end, err := l.bounds(topic, p, w)
	if err != nil || start >= end {
		return nil, err
	}
	pc, err := l.consumer.ConsumePartition(topic, p, start)
	if err != nil {
		return nil, fmt.Errorf("audit: read %s/%d: %w", topic, p, err)
	}
	// Closed before returning (not AsyncClose): the next scan may read the same partition.
	defer func() { _ = pc.Close() }()
	var out []Record
	idle := time.NewTimer(idleEnd)
	defer idle.Stop()
	for {
		select {
		case <-ctx.Done():
			return out, ctx.Err()
		case <-idle.C:
			return out, nil
		case cerr := <-pc.Errors():
			if cerr != nil {
				return out, fmt.Errorf("audit: read %s/%d: %w", topic, p, cerr.Err)
			}
		case m := <-pc.Messages():
			if m == nil {
				return out, nil
			}
			if m.Offset >= end {
				return out, nil
			}
			idle.Reset(idleEnd)
			if keep(m) {
				msg, err := batch.Decode(m)
				if err != nil {
					return out, fmt.Errorf("audit: %s/%d@%d: %w", topic, p, m.Offset, err)
				}
				if msg.Event != nil {
					out = append(out, Record{Place: Place{Topic: topic, Partition: p, Offset: m.Offset,
						Timestamp: m.Timestamp.UnixMilli()}, Envelope: msg.Envelope, Event: msg.Event})
				}
			}
			if m.Offset+1 >= end {
				return out, nil
			}
		}
	}
}

// bounds is the offset range of partition p within w: from the first record at or after
// w.from (Kafka's offsets-for-times lookup) to the first after w.to, or the partition's ends.
func (l *Log) bounds(topic string, p int32, w window) (int64, int64, error) {
	oldest, newest, err := batch.Bounds(l.client, topic, p)
	if err != nil {
		return 0, 0, fmt.Errorf("audit: %w", err)
	}
	start, end := oldest, newest
	if !w.from.IsZero() {
		if start, err = l.offsetAt(topic, p, w.from, newest); err != nil {
			return 0, 0, err
		}
	}
	if !w.to.IsZero() {
		if end, err = l.offsetAt(topic, p, w.to.Add(time.Millisecond), newest); err != nil {
			return 0, 0, err
		}
	}
	return max(start, oldest), min(end, newest), nil
}

// offsetAt is the first offset whose record time is at or after t, newest when none is.
func (l *Log) offsetAt(topic string, p int32, t time.Time, newest int64) (int64, error) {
	off, err := l.client.GetOffset(topic, p, t.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("audit: offset of %s/%d at %s: %w", topic, p, t.UTC().Format(time.RFC3339), err)
	}
	if off < 0 {
		return newest, nil
	}
	return off, nil
}

// stringField returns the value of the first JSON string field name in raw (`"name":"…"`),
// without unescaping: enough to pick records by id or tag before decoding any.
func stringField(raw []byte, name string) string {
	pat := []byte(`"` + name + `":"`)
	i := bytes.Index(raw, pat)
	if i < 0 {
		return ""
	}
	rest := raw[i+len(pat):]
	for j := 0; j < len(rest); j++ {
		switch rest[j] {
		case '\\':
			j++
		case '"':
			return string(rest[:j])
		}
	}
	return ""
}
