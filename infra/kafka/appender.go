package kafka

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"

	"tradesvc/events"
)

// Appender appends catalogue events to the log: each event is wrapped in an envelope (the
// message value) keyed by its partition key, and the events of one call travel in one
// acknowledged batch, acknowledged by every in-sync replica before Append returns. It is what
// the command handlers and the executor write with, and what tests use to append events.
type Appender struct {
	pub      *Publisher
	producer string
	now      func() time.Time

	// partitioners are the producer's partitioners of the topics PartitionOf was asked about,
	// by physical name: one is made once (it seeds a random source), and it keeps a hash
	// state, hence the mutex.
	partMu       sync.Mutex
	partitioners map[string]sarama.Partitioner
}

// NewAppender builds an appender that stamps envelopes with producer (component and
// instance, e.g. "executor/host-42") and the time from now.
func NewAppender(pub *Publisher, producer string, now func() time.Time) (*Appender, error) {
	if pub == nil || now == nil {
		return nil, errors.New("kafka: appender needs a publisher and a clock")
	}
	return &Appender{pub: pub, producer: producer, now: now, partitioners: map[string]sarama.Partitioner{}}, nil
}

// Wrap puts evs in envelopes stamped now, with the operation they belong to as correlation
// id (events.CorrelationOf). Callers that must store what they append (to re-append the very
// same envelopes later) wrap first and call AppendEnvelopes.
func (a *Appender) Wrap(evs ...events.Event) ([]events.Envelope, error) {
	now := a.now()
	out := make([]events.Envelope, len(evs))
	for i, e := range evs {
		env, err := events.Wrap(e, now, events.CorrelationOf(e), "", a.producer)
		if err != nil {
			return nil, err
		}
		out[i] = env
	}
	return out, nil
}

// Append wraps evs and appends them to topic in one batch.
func (a *Appender) Append(ctx context.Context, topic events.Topic, evs ...events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	envs, err := a.Wrap(evs...)
	if err != nil {
		return err
	}
	seqs := make([]uint64, len(evs))
	for i, e := range evs {
		seqs[i], _ = events.FactSeq(e)
	}
	return a.appendEnvelopes(ctx, topic, envs, seqs)
}

// AppendEnvelopes appends already wrapped events to topic in one batch. On error some of
// them may have been written: consumers deduplicate, so appending the same envelopes again
// is the way to finish the job.
func (a *Appender) AppendEnvelopes(ctx context.Context, topic events.Topic, envs ...events.Envelope) error {
	return a.appendEnvelopes(ctx, topic, envs, nil)
}

// appendEnvelopes appends envs; seqs, when given, are their trade-server feed sequences
// (0: none), sent in the FactSeqMetadata header.
func (a *Appender) appendEnvelopes(ctx context.Context, topic events.Topic, envs []events.Envelope, seqs []uint64) error {
	if len(envs) == 0 {
		return nil
	}
	msgs, err := envelopeMessages(ctx, envs, seqs)
	if err != nil {
		return err
	}
	return a.pub.PublishBatch(topic.Name, msgs...)
}

// envelopeMessages are envs as the messages that carry them: each one's type (and its seq, a
// trade-server fact's feed sequence, when seqs has one that is not 0) in the headers, keyed by
// its partition key.
func envelopeMessages(ctx context.Context, envs []events.Envelope, seqs []uint64) ([]*message.Message, error) {
	msgs := make([]*message.Message, len(envs))
	for i, env := range envs {
		raw, err := env.Marshal()
		if err != nil {
			return nil, fmt.Errorf("encode envelope %s: %w", env.Type, err)
		}
		msg := message.NewMessage(env.ID, raw)
		msg.SetContext(ctx)
		msg.Metadata.Set(TypeMetadata, env.Type)
		if i < len(seqs) && seqs[i] != 0 {
			msg.Metadata.Set(FactSeqMetadata, strconv.FormatUint(seqs[i], 10))
		}
		msgs[i] = WithKey(msg, env.Key)
	}
	return msgs, nil
}

// AppendEnvelopesAt appends envs to topic in one batch, like AppendEnvelopes, and returns
// where each of them landed. It sends no feed sequence header: it is not for trade-server
// facts (Append).
func (a *Appender) AppendEnvelopesAt(ctx context.Context, topic events.Topic, envs ...events.Envelope) ([]Position, error) {
	msgs, err := envelopeMessages(ctx, envs, nil)
	if err != nil {
		return nil, err
	}
	return a.pub.PublishAt(topic.Name, msgs...)
}

// PartitionOf returns the physical name of topic and the partition its records keyed key
// are appended to: the producer's own partitioner (sarama's hash of the key) over the
// partitions the service creates the topic with. What AppendEnvelopeAt returns is where a
// record did land.
func (a *Appender) PartitionOf(topic events.Topic, key string) (string, int32) {
	name := a.pub.cfg.Topic(topic.Name)
	a.partMu.Lock()
	defer a.partMu.Unlock()
	p, ok := a.partitioners[name]
	if !ok {
		p = sarama.NewHashPartitioner(name)
		a.partitioners[name] = p
	}
	part, err := p.Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(key)}, topic.Partitions)
	if err != nil {
		return name, -1
	}
	return name, part
}
