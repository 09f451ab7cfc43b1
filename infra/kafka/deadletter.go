package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
)

// Headers of a dead-letter record. A parked record keeps the original key and value bytes
// and the original headers; these say where it came from, who failed on it and why. A
// replayed record (no key, no value) says that the parked record at dlq.ref was re-applied.
const (
	HeaderKind      = "dlq.kind" // KindParked or KindReplayed
	HeaderTopic     = "dlq.topic"
	HeaderPartition = "dlq.partition"
	HeaderOffset    = "dlq.offset"
	HeaderGroup     = "dlq.group"
	HeaderError     = "dlq.error"
	HeaderAttempts  = "dlq.attempts"
	HeaderTimestamp = "dlq.timestamp" // the original message's log time, Unix ms
	HeaderParkedAt  = "dlq.parked_at" // Unix ms
	HeaderRef       = "dlq.ref"       // a replayed record: the offset of the parked one

	KindParked   = "parked"
	KindReplayed = "replayed"
)

// DeadLetterTopic is the physical dead-letter topic of a physical source topic.
func DeadLetterTopic(sourceTopic string) string { return sourceTopic + events.DeadLetterSuffix }

// DeadLetters parks messages in the dead-letter topic of their source topic (<topic>.dlq)
// with an idempotent producer that waits for every in-sync replica: a message is moved past
// only once it is durably parked.
type DeadLetters struct {
	producer sarama.SyncProducer
	now      func() time.Time
}

// NewDeadLetters connects the dead-letter producer. now stamps dlq.parked_at.
func NewDeadLetters(cfg Config, now func() time.Time) (*DeadLetters, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if now == nil {
		return nil, errors.New("kafka: dead letters need a clock")
	}
	p, err := sarama.NewSyncProducer(cfg.Brokers, cfg.ProducerConfig())
	if err != nil {
		return nil, fmt.Errorf("kafka: dead-letter producer: %w", err)
	}
	return &DeadLetters{producer: p, now: now}, nil
}

// Park implements batch.DeadLetterer.
func (d *DeadLetters) Park(ctx context.Context, p batch.Parked) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	reason := "unknown error"
	if p.Err != nil {
		reason = p.Err.Error()
	}
	headers := make([]sarama.RecordHeader, 0, len(p.Headers)+9)
	for _, h := range p.Headers {
		if h != nil && !strings.HasPrefix(string(h.Key), "dlq.") {
			headers = append(headers, *h)
		}
	}
	headers = append(headers,
		header(HeaderKind, KindParked),
		header(HeaderTopic, p.Topic),
		header(HeaderPartition, strconv.Itoa(int(p.Partition))),
		header(HeaderOffset, strconv.FormatInt(p.Offset, 10)),
		header(HeaderGroup, p.Group),
		header(HeaderError, reason),
		header(HeaderAttempts, strconv.Itoa(p.Attempts)),
		header(HeaderTimestamp, strconv.FormatInt(p.Timestamp.UnixMilli(), 10)),
		header(HeaderParkedAt, strconv.FormatInt(d.now().UnixMilli(), 10)))
	msg := &sarama.ProducerMessage{Topic: DeadLetterTopic(p.Topic), Headers: headers}
	if p.Key != nil {
		msg.Key = sarama.ByteEncoder(p.Key)
	}
	if p.Value != nil {
		msg.Value = sarama.ByteEncoder(p.Value)
	}
	if _, _, err := d.producer.SendMessage(msg); err != nil {
		return fmt.Errorf("kafka: park %s/%d offset %d in %s: %w", p.Topic, p.Partition, p.Offset, msg.Topic, err)
	}
	return nil
}

// MarkReplayed records in its dead-letter topic that dl was re-applied: it is no longer
// pending, and a later replay leaves it alone.
func (d *DeadLetters) MarkReplayed(ctx context.Context, dl DeadLetter) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	msg := &sarama.ProducerMessage{Topic: dl.DLQTopic, Headers: []sarama.RecordHeader{
		header(HeaderKind, KindReplayed),
		header(HeaderRef, strconv.FormatInt(dl.DLQOffset, 10)),
		header(HeaderParkedAt, strconv.FormatInt(d.now().UnixMilli(), 10)),
	}}
	if _, _, err := d.producer.SendMessage(msg); err != nil {
		return fmt.Errorf("kafka: mark %s offset %d replayed: %w", dl.DLQTopic, dl.DLQOffset, err)
	}
	return nil
}

// Close closes the producer.
func (d *DeadLetters) Close() error { return d.producer.Close() }

func header(k, v string) sarama.RecordHeader {
	return sarama.RecordHeader{Key: []byte(k), Value: []byte(v)}
}

// DeadLetter is one parked message read back from a dead-letter topic.
type DeadLetter struct {
	// DLQTopic and DLQOffset locate the parked record (its partition is 0).
	DLQTopic  string
	DLQOffset int64
	// Origin is the original message (its headers without the dlq.* ones) and the consumer
	// group that parked it; Message re-applies it.
	batch.Origin
	Error    string
	Attempts int
	ParkedAt time.Time
	// Replayed is set once `tradesvc dlq replay` re-applied it.
	Replayed   bool
	ReplayedAt time.Time
}

// ReadDeadLetters reads the dead-letter topics (physical names) up to their end as it is now
// and returns every parked message, oldest first, each marked Replayed when a replayed
// record refers to it. A topic that does not exist yet holds nothing.
func ReadDeadLetters(ctx context.Context, cfg Config, dlqTopics []string) ([]DeadLetter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	client, err := sarama.NewClient(cfg.Brokers, cfg.ConsumerConfig())
	if err != nil {
		return nil, fmt.Errorf("kafka: dead letters: %w", err)
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("kafka: dead letters: %w", err)
	}
	defer consumer.Close()
	var out []DeadLetter
	for _, topic := range dlqTopics {
		got, err := readDeadLetterTopic(ctx, client, consumer, topic)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

func readDeadLetterTopic(ctx context.Context, client sarama.Client, consumer sarama.Consumer, topic string) ([]DeadLetter, error) {
	parts, err := client.Partitions(topic)
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: partitions of %s: %w", topic, err)
	}
	var parked []DeadLetter
	index := map[int64]int{}
	for _, part := range parts {
		oldest, end, err := batch.Bounds(client, topic, part)
		if err != nil {
			return nil, fmt.Errorf("kafka: %w", err)
		}
		if end <= oldest {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, part, oldest)
		if err != nil {
			return nil, fmt.Errorf("kafka: read %s/%d: %w", topic, part, err)
		}
		for next := oldest; next < end; {
			select {
			case <-ctx.Done():
				pc.AsyncClose()
				return nil, ctx.Err()
			case m, ok := <-pc.Messages():
				if !ok {
					return nil, fmt.Errorf("kafka: read %s/%d: consumer closed at offset %d", topic, part, next)
				}
				next = m.Offset + 1
				h := headerMap(m.Headers)
				switch h[HeaderKind] {
				case KindReplayed:
					ref, _ := strconv.ParseInt(h[HeaderRef], 10, 64)
					if i, ok := index[ref]; ok {
						parked[i].Replayed = true
						parked[i].ReplayedAt = unixMs(h[HeaderParkedAt])
					}
				default:
					index[m.Offset] = len(parked)
					parked = append(parked, deadLetterOf(topic, m, h))
				}
			}
		}
		if err := pc.Close(); err != nil {
			return nil, fmt.Errorf("kafka: read %s/%d: %w", topic, part, err)
		}
	}
	return parked, nil
}

func deadLetterOf(topic string, m *sarama.ConsumerMessage, h map[string]string) DeadLetter {
	dl := DeadLetter{DLQTopic: topic, DLQOffset: m.Offset, Error: h[HeaderError], ParkedAt: unixMs(h[HeaderParkedAt]),
		Origin: batch.Origin{Group: h[HeaderGroup], Topic: h[HeaderTopic], Key: m.Key, Value: m.Value,
			Timestamp: unixMs(h[HeaderTimestamp])}}
	if p, err := strconv.ParseInt(h[HeaderPartition], 10, 32); err == nil {
		dl.Partition = int32(p)
	}
	dl.Offset, _ = strconv.ParseInt(h[HeaderOffset], 10, 64)
	dl.Attempts, _ = strconv.Atoi(h[HeaderAttempts])
	for _, hd := range m.Headers {
		if !strings.HasPrefix(string(hd.Key), "dlq.") {
			dl.Headers = append(dl.Headers, hd)
		}
	}
	return dl
}

func headerMap(hs []*sarama.RecordHeader) map[string]string {
	out := make(map[string]string, len(hs))
	for _, h := range hs {
		if h != nil {
			out[string(h.Key)] = string(h.Value)
		}
	}
	return out
}

func unixMs(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
