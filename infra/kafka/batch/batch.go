// Package batch consumes Kafka topics in a consumer group and hands each partition's
// messages to a handler in batches, marking offsets only after the handler has applied a
// batch. It exists beside watermill-kafka because watermill delivers one un-acked message
// per partition at a time, which rules out batched writes to Postgres and ClickHouse with
// at-least-once delivery; projections use it, publishers and per-message consumers use
// watermill.
package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
)

// Message is one decoded event with where it came from.
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	Envelope  events.Envelope
	// Event is the decoded payload, nil when this build does not know the type (skip it).
	Event events.Event
}

// Handler applies one batch of one partition, in offset order. It must be idempotent:
// after a crash the batch may come again. An error retries the same batch after a pause;
// offsets never move past a batch that was not applied.
type Handler func(ctx context.Context, batch []Message) error

// Config of a batch consumer.
type Config struct {
	// Brokers to bootstrap from.
	Brokers []string
	// Group is the consumer group, the projection's stable name (prefix included).
	Group string
	// Topics to consume (prefix included).
	Topics []string
	// MaxBatch caps a batch (default 500).
	MaxBatch int
	// MaxWait is how long a batch may wait to fill once it has a message (default 50ms).
	// NoWait (a negative MaxWait) makes a batch of whatever is already buffered, for
	// consumers on the latency path of an order (the executor, the trading projection).
	MaxWait time.Duration
	// Sarama is the base client configuration (version, client id); required.
	Sarama *sarama.Config
	// Logger receives retry and decode problems.
	Logger *slog.Logger
	// OnBatch, when set, is told of every applied batch and every failed attempt (metrics).
	OnBatch func(topic string, partition int32, events int, lastOffset int64, err error)
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("batch: no brokers"))
	}
	if c.Group == "" {
		errs = append(errs, errors.New("batch: no consumer group"))
	}
	if len(c.Topics) == 0 {
		errs = append(errs, errors.New("batch: no topics"))
	}
	if c.Sarama == nil {
		errs = append(errs, errors.New("batch: no sarama config"))
	}
	return errors.Join(errs...)
}

// NoWait is the MaxWait of a consumer that never waits for a batch to fill.
const NoWait time.Duration = -1

// Run consumes until ctx ends. It returns nil on cancellation.
func Run(ctx context.Context, cfg Config, handle Handler) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 500
	}
	if cfg.MaxWait == 0 {
		cfg.MaxWait = 50 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	sc := *cfg.Sarama
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.Offsets.AutoCommit.Enable = true
	sc.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	sc.Consumer.Return.Errors = true
	if sc.Consumer.MaxWaitTime > 100*time.Millisecond || sc.Consumer.MaxWaitTime == 0 {
		sc.Consumer.MaxWaitTime = 100 * time.Millisecond
	}
	group, err := sarama.NewConsumerGroup(cfg.Brokers, cfg.Group, &sc)
	if err != nil {
		return fmt.Errorf("batch: consumer group %s: %w", cfg.Group, err)
	}
	defer group.Close()
	go func() {
		for err := range group.Errors() {
			cfg.Logger.Warn("kafka consumer group error", "group", cfg.Group, "err", err)
		}
	}()
	gh := &groupHandler{cfg: cfg, handle: handle}
	for ctx.Err() == nil {
		if err := group.Consume(ctx, cfg.Topics, gh); err != nil {
			if errors.Is(err, sarama.ErrClosedConsumerGroup) || ctx.Err() != nil {
				break
			}
			cfg.Logger.Warn("kafka consume", "group", cfg.Group, "err", err)
			sleep(ctx, time.Second)
		}
	}
	return nil
}

type groupHandler struct {
	cfg    Config
	handle Handler
}

func (*groupHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (*groupHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (g *groupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	ctx := sess.Context()
	in := claim.Messages()
	for {
		var raw []*sarama.ConsumerMessage
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-in:
			if !ok {
				return nil
			}
			raw = append(raw, m)
		}
		var ok bool
		if raw, ok = g.fill(ctx, in, raw); !ok {
			return nil
		}
		msgs := g.decode(raw)
		for attempt := 1; len(msgs) > 0; attempt++ { // a batch of nothing readable only moves the offset
			err := g.handle(ctx, msgs)
			if g.cfg.OnBatch != nil && ctx.Err() == nil {
				g.cfg.OnBatch(claim.Topic(), claim.Partition(), len(msgs), raw[len(raw)-1].Offset, err)
			}
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return nil // not marked: the next owner of the partition applies it again
			}
			g.cfg.Logger.Error("projection batch failed; retrying", "group", g.cfg.Group,
				"topic", claim.Topic(), "partition", claim.Partition(), "attempt", attempt, "err", err)
			sleep(ctx, backoff(attempt))
		}
		g.cfg.Logger.Debug("batch applied", "group", g.cfg.Group, "topic", claim.Topic(), "partition", claim.Partition(),
			"messages", len(raw), "events", len(msgs), "lastOffset", raw[len(raw)-1].Offset)
		sess.MarkMessage(raw[len(raw)-1], "")
	}
}

// fill adds to raw what the batch may still take: what is already buffered (NoWait), or
// what arrives within MaxWait. ok is false when ctx ended meanwhile.
func (g *groupHandler) fill(ctx context.Context, in <-chan *sarama.ConsumerMessage, raw []*sarama.ConsumerMessage) ([]*sarama.ConsumerMessage, bool) {
	if g.cfg.MaxWait < 0 {
		for len(raw) < g.cfg.MaxBatch {
			select {
			case m, ok := <-in:
				if !ok {
					return raw, true
				}
				raw = append(raw, m)
			default:
				return raw, true
			}
		}
		return raw, true
	}
	timer := time.NewTimer(g.cfg.MaxWait)
	defer timer.Stop()
	for len(raw) < g.cfg.MaxBatch {
		select {
		case m, ok := <-in:
			if !ok {
				return raw, true
			}
			raw = append(raw, m)
		case <-timer.C:
			return raw, true
		case <-ctx.Done():
			return raw, false
		}
	}
	return raw, true
}

func (g *groupHandler) decode(raw []*sarama.ConsumerMessage) []Message {
	out := make([]Message, 0, len(raw))
	for _, m := range raw {
		msg := Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset}
		env, err := events.UnmarshalEnvelope(m.Value)
		if err != nil {
			g.cfg.Logger.Error("undecodable message skipped", "topic", m.Topic, "partition", m.Partition, "offset", m.Offset, "err", err)
			continue
		}
		msg.Envelope = env
		ev, err := events.Decode(env)
		if err != nil && !errors.Is(err, events.ErrUnknownType) {
			g.cfg.Logger.Error("undecodable event skipped", "type", env.Type, "id", env.ID, "err", err)
			continue
		}
		msg.Event = ev
		out = append(out, msg)
	}
	return out
}

func defaultLogger() *slog.Logger { return slog.Default() }

func backoff(attempt int) time.Duration {
	d := time.Duration(attempt) * 200 * time.Millisecond
	if d > 5*time.Second {
		d = 5 * time.Second
	}
	return d
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
