package batch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"
	"tradesvc/infra/wait"

	"github.com/IBM/sarama"
)

// Origin is a message as its consumer received it, and who that consumer was: what a parked
// message keeps of the original (its key, bytes, headers and log time, where it came from)
// and what a re-application hands to the consumer again.
type Origin struct {
	// Group is the consumer group that failed on it (prefix included).
	Group string
	// Topic, Partition and Offset locate the original message.
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []*sarama.RecordHeader
	// Timestamp is the original message's log time.
	Timestamp time.Time
}

// Message is the original message, to apply it again: the same topic, partition, offset,
// key, bytes, headers and log time.
func (o Origin) Message() *sarama.ConsumerMessage {
	return &sarama.ConsumerMessage{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset, Key: o.Key,
		Value: o.Value, Headers: o.Headers, Timestamp: o.Timestamp}
}

// Parked is a message a consumer could not apply, as it goes to the dead-letter topic: the
// original, and why it failed.
type Parked struct {
	Origin
	// Err is why it was parked; Attempts how many times it was tried (0: undecodable).
	Err      error
	Attempts int
}

// DeadLetterer parks messages durably (infra/kafka.DeadLetters writes <topic>.dlq). Park
// returns only once the message is stored; an error leaves it to be parked again.
type DeadLetterer interface {
	Park(ctx context.Context, p Parked) error
}

// Observer is told what a consumer does, for readiness and metrics. Its methods are called
// from the consumer's goroutines and must not block.
type Observer interface {
	// Claimed: this consumer now reads topic/partition from offset next; highWater is the
	// partition's end as last seen (-1 when unknown).
	Claimed(topic string, partition int32, next, highWater int64)
	// Released: another consumer (or none) owns topic/partition now.
	Released(topic string, partition int32)
	// Applied: a batch of events up to lastOffset, logged at logTime, was applied.
	Applied(topic string, partition int32, events int, lastOffset int64, logTime time.Time, highWater int64)
	// Failed: an attempt to apply a batch failed; it is tried again.
	Failed(topic string, partition int32, attempt int, err error)
	// Disconnected: the consumer cannot reach Kafka or its group; it reconnects.
	Disconnected(err error)
	// Parked: a message was parked in the dead-letter topic.
	Parked(p Parked)
}

// NopObserver is told everything and does nothing (the default Observer).
type NopObserver struct{}

func (NopObserver) Claimed(string, int32, int64, int64)                 {}
func (NopObserver) Released(string, int32)                              {}
func (NopObserver) Applied(string, int32, int, int64, time.Time, int64) {}
func (NopObserver) Failed(string, int32, int, error)                    {}
func (NopObserver) Disconnected(error)                                  {}
func (NopObserver) Parked(Parked)                                       {}

// IsTransient reports the errors that say a dependency is out of reach (network, timeouts,
// a closed connection) rather than that a message cannot be applied.
func IsTransient(err error) bool {
	var ne net.Error
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// decodeOrPark decodes a batch; a message that cannot be decoded is parked (decoding is
// deterministic: retrying cannot help). ok is false when ctx ended, or when parking was
// impossible and the consumer has been stopped.
func (g *groupHandler) decodeOrPark(ctx context.Context, raw []*sarama.ConsumerMessage) ([]Message, bool) {
	out := make([]Message, 0, len(raw))
	for _, m := range raw {
		msg, err := decodeAccepted(m, g.cfg.Accept, g.cfg.Applied, g.cfg.Passed)
		if err != nil {
			g.cfg.Logger.Error("undecodable message: parking it", "group", g.cfg.Group, "topic", m.Topic,
				"partition", m.Partition, "offset", m.Offset, "err", err)
			if !g.park(ctx, msg, err, 0) {
				return nil, false
			}
			continue
		}
		out = append(out, msg)
	}
	return out, true
}

// apply applies msgs until they are applied or parked; false when ctx ended first. A
// failure that is not transient and repeats the same way MaxAttempts times, while the store
// answers, makes the batch suspect: its messages are applied one by one, and the one that
// still fails that way is parked.
func (g *groupHandler) apply(ctx context.Context, claim sarama.ConsumerGroupClaim, msgs []Message) (*deferred, bool) {
	d := &deferred{}
	same, lastErr := 0, ""
	for attempt := 1; len(msgs) > 0; attempt++ {
		d = &deferred{} // only the attempt that succeeds defers anything
		err := g.handle(context.WithValue(ctx, deferKey{}, d), msgs)
		if err == nil {
			return d, true
		}
		if ctx.Err() != nil {
			return d, false // not marked: the next owner of the partition applies it again
		}
		if errors.Is(err, ErrRetrySoon) {
			_ = wait.For(ctx, 5*time.Millisecond)
			attempt--
			continue
		}
		if errors.Is(err, ErrResume) {
			g.cfg.Logger.Warn("the stored positions moved: starting again from them", "group", g.cfg.Group,
				"topic", claim.Topic(), "partition", claim.Partition(), "err", err)
			g.resume()
			return d, false
		}
		g.cfg.Observer.Failed(claim.Topic(), claim.Partition(), attempt, err)
		if g.poisonable(ctx, err) {
			if err.Error() == lastErr {
				same++
			} else {
				same, lastErr = 1, err.Error()
			}
		} else {
			same, lastErr = 0, ""
		}
		if g.cfg.MaxAttempts > 0 && same >= g.cfg.MaxAttempts {
			if len(msgs) == 1 {
				g.cfg.Logger.Error("message fails the same way every time: parking it", "group", g.cfg.Group,
					"topic", msgs[0].Topic, "partition", msgs[0].Partition, "offset", msgs[0].Offset, "attempts", attempt, "err", err)
				return d, g.park(ctx, msgs[0], err, attempt)
			}
			g.cfg.Logger.Warn("batch fails the same way every time: applying its messages one by one", "group", g.cfg.Group,
				"topic", claim.Topic(), "partition", claim.Partition(), "messages", len(msgs), "err", err)
			all := &deferred{}
			for _, m := range msgs {
				one, ok := g.apply(ctx, claim, []Message{m})
				all.dones = append(all.dones, one.dones...)
				if !ok {
					return all, false
				}
			}
			return all, true
		}
		g.cfg.Logger.Error("batch failed; retrying", "group", g.cfg.Group, "topic", claim.Topic(),
			"partition", claim.Partition(), "attempt", attempt, "err", err)
		_ = wait.For(ctx, backoff(attempt))
	}
	return d, true
}

// poisonable: err could be the message's fault (not an outage).
func (g *groupHandler) poisonable(ctx context.Context, err error) bool {
	if IsTransient(err) || g.cfg.Transient != nil && g.cfg.Transient(err) {
		return false
	}
	if g.cfg.Healthy != nil {
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if herr := g.cfg.Healthy(hctx); herr != nil {
			return false
		}
	}
	return true
}

// park stores m in the dead-letter topic, retrying until it is stored; false when ctx ended
// first, or when there is no dead-letter topic (the consumer is then stopped: a message is
// never skipped without a trace).
func (g *groupHandler) park(ctx context.Context, m Message, cause error, attempts int) bool {
	if g.cfg.DeadLetter == nil {
		g.fatal(fmt.Errorf("%s/%d offset %d cannot be applied and there is no dead-letter topic to park it in: %w",
			m.Topic, m.Partition, m.Offset, cause))
		return false
	}
	p := Parked{Origin: Origin{Group: g.cfg.Group, Topic: m.Topic, Partition: m.Partition, Offset: m.Offset},
		Err: cause, Attempts: attempts}
	if r := m.raw; r != nil {
		p.Key, p.Value, p.Headers, p.Timestamp = r.Key, r.Value, r.Headers, r.Timestamp
	}
	for attempt := 1; ; attempt++ {
		err := g.cfg.DeadLetter.Park(ctx, p)
		if err == nil {
			g.cfg.Observer.Parked(p)
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		g.cfg.Logger.Error("cannot park a message in its dead-letter topic; retrying", "group", g.cfg.Group,
			"topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "attempt", attempt, "err", err)
		_ = wait.For(ctx, backoff(attempt))
	}
}
