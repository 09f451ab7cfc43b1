// Package batch consumes Kafka topics in a consumer group and hands each partition's
// messages to a handler in batches, marking offsets only after the handler has applied a
// batch. It exists beside watermill-kafka because watermill delivers one un-acked message
// per partition at a time, which rules out batched writes to Postgres and ClickHouse with
// at-least-once delivery; projections use it, publishers and per-message consumers use
// watermill.
//
// Nothing is skipped silently: a message that cannot be decoded, or that fails the same way
// again and again while its store is reachable, is parked in a dead-letter topic with its
// error (poison.go), and only then does the consumer move past it.
package batch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
	"tradesvc/infra/check"
	"tradesvc/infra/wait"
)

// Message is one decoded event with where it came from.
type Message struct {
	Topic     string
	Partition int32
	Offset    int64
	// Timestamp is the record's Kafka timestamp: when the producer appended it (CreateTime),
	// the moment an event became durable in the log to the millisecond.
	Timestamp time.Time
	Envelope  events.Envelope
	// Event is the decoded payload, nil when this build does not know the type (skip it).
	Event events.Event

	raw *sarama.ConsumerMessage // for parking: the original key, bytes and headers
}

// Handler applies one batch of one partition, in offset order. It must be idempotent:
// after a crash the batch may come again. An error retries the same batch after a pause;
// offsets never move past a batch that was not applied (or parked, see Config.DeadLetter).
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
	// FetchWait and FetchMin: a fetch returns once FetchMin bytes are there (default 1) or
	// after FetchWait (default 100ms, at most). Consumers off the latency path raise both so
	// that a quiet stream costs few fetches.
	FetchWait time.Duration
	FetchMin  int32
	// Trailing names topics (prefix included) read a little behind, and TrailFor how far:
	// once a message of one of them arrives, every claimed partition of those topics is
	// paused for TrailFor, so that their messages come in one fetch per TrailFor rather than
	// one per message, while the other topics' fetches go on as before. For a topic whose
	// messages wait before they are applied anyway (the trading projection's commands,
	// which usually come first in band with their outcome): a fetch the broker answers at
	// once for each of them costs the broker and the consumer a wake-up that buys nothing.
	Trailing []string
	TrailFor time.Duration
	// Logger receives retry and decode problems.
	Logger *slog.Logger

	// DeadLetter parks what can never be applied. Without it an undecodable message or a
	// poison batch stops the consumer with an error (nothing is ever skipped unseen).
	DeadLetter DeadLetterer
	// MaxAttempts is how many times in a row a batch may fail the same way (same error
	// text, not Transient, Healthy answering) before its messages are applied one by one
	// and the one that keeps failing is parked. Zero never parks a failing batch: it is
	// retried until it applies (the executor: a command is never parked for a handler error).
	MaxAttempts int
	// Transient reports errors that mean "a dependency is unavailable", which are retried
	// forever and never make a message poison. Network and context errors always are.
	Transient func(error) bool
	// Healthy, when set, is asked before a message is parked: while it fails (the store is
	// down) the failure is an outage, retried, not a poison message.
	Healthy func(context.Context) error
	// Observer is told of claims, applied and failed batches and parked messages (health
	// and metrics); nil observes nothing.
	Observer Observer
	// Positions, when set, is where the handler stores the log positions it applied, in the
	// same transaction as its writes: every session starts each partition where Positions
	// says (Kafka's committed offsets are then only a mirror for lag metrics), and a handler
	// that finds the store elsewhere than it expected returns ErrResume, which ends the
	// session so that the next one starts from the store again.
	Positions Positions
	// Accept, when set, names the event types the handler applies: a message of another type
	// (told by its event_type header when it has one) reaches the handler undecoded, with a
	// nil Event, which keeps its offset in the batch.
	Accept func(eventType string) bool
	// Applied, when set, names the trade-server facts the handler applied already (by feed
	// sequence): a message whose fact_seq header it names reaches the handler undecoded,
	// with a nil Event, like a type Accept refuses.
	Applied func(seq uint64) bool
	// Passed, when set, says whether the handler applied a message already by its position
	// (its partition's stored position is past it: the handler applied it another way); such
	// a message is not decoded either.
	Passed func(topic string, partition int32, offset int64) bool
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var p check.Problems
	p.If(len(c.Brokers) == 0, "batch: no brokers")
	p.If(c.Group == "", "batch: no consumer group")
	p.If(len(c.Topics) == 0, "batch: no topics")
	p.If(c.Sarama == nil, "batch: no sarama config")
	p.If(len(c.Trailing) > 0 && c.TrailFor <= 0, "batch: trailing topics without a TrailFor")
	p.If(c.MaxAttempts < 0, "batch: negative MaxAttempts")
	p.If(c.MaxAttempts > 0 && c.DeadLetter == nil, "batch: MaxAttempts needs a DeadLetter to park in")
	return p.Err()
}

// Positions are the log positions a handler applied, as its own store holds them.
type Positions interface {
	// Load returns, for each of the topic's partitions with a stored position, the offset
	// after the last message applied; a partition missing from the map has none (it is read
	// from its oldest message).
	Load(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error)
}

// Rewinding is implemented by Positions whose store may take back positions it acknowledged
// (one that commits asynchronously, and loses its last commits in a crash): the channel
// Rewound returns at a session's start is closed when the store was found behind, and the
// session then ends, so that the next one starts every partition from the store again, even
// those no message comes to.
type Rewinding interface {
	Rewound() <-chan struct{}
}

// ErrResume is returned by a handler whose store holds other positions than the batch
// follows (a commit it could not confirm, another consumer of the same partition): the
// session ends and the next one starts every partition from the store.
var ErrResume = errors.New("batch: resume from the stored positions")

// ErrRetrySoon is returned by a handler that needs another consumer to go first (a fact
// whose command is still on its way): the batch is applied again a few milliseconds later,
// and the wait counts as no failure.
var ErrRetrySoon = errors.New("batch: retry soon")

// NoWait is the MaxWait of a consumer that never waits for a batch to fill.
const NoWait time.Duration = -1

// Run consumes until ctx ends, reconnecting with backoff whenever the group cannot be
// joined or a session fails (Kafka down, a rebalance error). It returns nil on
// cancellation, and an error only for a bad configuration or a message it may not skip
// (undecodable or poison without a DeadLetter).
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
	if cfg.Observer == nil {
		cfg.Observer = NopObserver{}
	}
	sc := *cfg.Sarama
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	sc.Consumer.Offsets.AutoCommit.Enable = true
	sc.Consumer.Offsets.AutoCommit.Interval = 200 * time.Millisecond
	sc.Consumer.Return.Errors = true
	if sc.Consumer.MaxWaitTime > 100*time.Millisecond || sc.Consumer.MaxWaitTime == 0 {
		sc.Consumer.MaxWaitTime = 100 * time.Millisecond
	}
	if cfg.FetchWait > 0 {
		sc.Consumer.MaxWaitTime = cfg.FetchWait
	}
	if cfg.FetchMin > 0 {
		sc.Consumer.Fetch.Min = cfg.FetchMin
	}
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	gh := &groupHandler{cfg: cfg, handle: handle, fatal: stop}
	for attempt := 1; ctx.Err() == nil; attempt++ {
		group, err := sarama.NewConsumerGroup(cfg.Brokers, cfg.Group, &sc)
		if err != nil {
			cfg.Logger.Warn("kafka consumer group cannot start; retrying", "group", cfg.Group, "attempt", attempt, "err", err)
			cfg.Observer.Disconnected(fmt.Errorf("join consumer group %s: %w", cfg.Group, err))
			_ = wait.For(ctx, reconnectDelay(attempt))
			continue
		}
		errsDone := make(chan struct{})
		go func() {
			defer close(errsDone)
			for err := range group.Errors() { // closed by group.Close
				cfg.Logger.Warn("kafka consumer group error", "group", cfg.Group, "err", err)
			}
		}()
		gh.group = group
		if consume(ctx, cfg, group, gh) {
			attempt = 0
		}
		if err := group.Close(); err != nil {
			cfg.Logger.Warn("kafka consumer group close", "group", cfg.Group, "err", err)
		}
		<-errsDone
		if ctx.Err() == nil {
			_ = wait.For(ctx, reconnectDelay(attempt+1))
		}
	}
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return fmt.Errorf("batch: consumer %s stopped: %w", cfg.Group, err)
	}
	return nil
}

// consume runs sessions of one consumer group until ctx ends or sessions keep failing (then
// Run starts over with a new group: fresh connections). It reports whether a session ran.
func consume(ctx context.Context, cfg Config, group sarama.ConsumerGroup, gh *groupHandler) (ran bool) {
	for attempt := 1; ctx.Err() == nil; attempt++ {
		sctx, resume := context.WithCancel(ctx)
		gh.resume = resume
		err := group.Consume(sctx, cfg.Topics, gh)
		resumed := sctx.Err() != nil && ctx.Err() == nil
		resume()
		if ctx.Err() != nil || errors.Is(err, sarama.ErrClosedConsumerGroup) {
			return ran
		}
		if resumed {
			ran, attempt = true, 0 // a handler asked to start again from its stored positions
			continue
		}
		if err == nil {
			ran, attempt = true, 0 // a rebalance ended the session: join again at once
			continue
		}
		cfg.Logger.Warn("kafka consume failed; retrying", "group", cfg.Group, "attempt", attempt, "err", err)
		cfg.Observer.Disconnected(fmt.Errorf("consume %s: %w", cfg.Group, err))
		if attempt >= 3 {
			return ran
		}
		_ = wait.For(ctx, reconnectDelay(attempt))
	}
	return ran
}

type groupHandler struct {
	cfg    Config
	handle Handler
	// fatal stops Run for good: a message that may not be skipped and cannot be parked.
	fatal context.CancelCauseFunc
	// resume ends the current session (ErrResume).
	resume context.CancelFunc
	// group is the consumer group of the current session; trail its trailing partitions.
	group sarama.ConsumerGroup
	trail *trail
}

// Setup starts every claimed partition where the handler's store says it stands, whatever
// Kafka's committed offset is: ahead of it after a store that lost a commit, behind it
// after a commit to Kafka that failed. A store that cannot be read fails the session (it is
// joined again after a backoff).
func (g *groupHandler) Setup(sess sarama.ConsumerGroupSession) error {
	g.trail = newTrail(g.group, g.cfg, sess.Claims())
	if g.cfg.Positions == nil {
		return nil
	}
	if r, ok := g.cfg.Positions.(Rewinding); ok {
		// Taken before the positions are loaded: a store found behind after that ends this
		// session, one found behind before it was read behind already.
		rewound, resume := r.Rewound(), g.resume
		go func() {
			select {
			case <-rewound:
				resume()
			case <-sess.Context().Done():
			}
		}()
	}
	ctx, cancel := context.WithTimeout(sess.Context(), 30*time.Second)
	defer cancel()
	for topic, parts := range sess.Claims() {
		stored, err := g.cfg.Positions.Load(ctx, topic, parts)
		if err != nil {
			return fmt.Errorf("batch: stored positions of %s: %w", topic, err)
		}
		for _, p := range parts {
			next, ok := stored[p]
			if !ok {
				next = sarama.OffsetOldest // nothing applied yet: from the start of the log
			}
			sess.ResetOffset(topic, p, next, "") // moves back only
			if ok {
				sess.MarkOffset(topic, p, next, "") // moves forward only
			}
		}
	}
	return nil
}

// Cleanup resumes the trailing partitions the session paused: a pause outlives the session
// in the consumer group otherwise.
func (g *groupHandler) Cleanup(sarama.ConsumerGroupSession) error {
	g.trail.stop()
	return nil
}

func (g *groupHandler) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	ctx := sess.Context()
	topic, part := claim.Topic(), claim.Partition()
	g.cfg.Observer.Claimed(topic, part, claim.InitialOffset(), claim.HighWaterMarkOffset())
	defer g.cfg.Observer.Released(topic, part)
	var marks chan marked // batches whose end was deferred, to be marked in order (marker)
	var markerDone chan struct{}
	defer func() {
		if marks != nil {
			close(marks)
			<-markerDone // a session never ends before what it applied is marked
		}
	}()
	in := claim.Messages()
	trailing := g.trail.has(topic)
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
		if trailing && !g.trail.await(ctx) {
			return nil
		}
		var ok bool
		if raw, ok = g.fill(ctx, in, raw); !ok {
			return nil
		}
		msgs, ok := g.decodeOrPark(ctx, raw)
		if !ok {
			return nil // not marked: the next owner of the partition reads it again
		}
		d, ok := g.apply(ctx, claim, msgs)
		if !ok {
			return nil
		}
		last := raw[len(raw)-1]
		g.cfg.Logger.Debug("batch applied", "group", g.cfg.Group, "topic", topic, "partition", part,
			"messages", len(raw), "events", len(msgs), "lastOffset", last.Offset)
		done := marked{last: last, events: len(msgs), high: claim.HighWaterMarkOffset(), dones: d.dones}
		if marks == nil && len(d.dones) == 0 {
			g.mark(sess, done)
			continue
		}
		if marks == nil {
			marks = make(chan marked, maxDeferred)
			markerDone = make(chan struct{})
			go g.marker(sess, marks, markerDone)
		}
		marks <- done // waits while maxDeferred batches are still being finished
	}
}

// maxDeferred bounds the batches of one partition whose handler deferred their end (Defer)
// and that are not marked yet: the consumer waits for the oldest beyond it.
const maxDeferred = 8

// marked is a batch applied (or deferred) and waiting to be marked.
type marked struct {
	last   *sarama.ConsumerMessage
	events int
	high   int64
	dones  []<-chan error
}

// mark marks a batch done: its offset, and the observer's record of it.
func (g *groupHandler) mark(sess sarama.ConsumerGroupSession, m marked) {
	sess.MarkMessage(m.last, "")
	g.cfg.Observer.Applied(m.last.Topic, m.last.Partition, m.events, m.last.Offset, m.last.Timestamp, m.high)
}

// marker marks the batches of one partition in their order, each once what its handler
// deferred is done. A deferred part that failed ends the session, so that the next one
// starts from the last batch marked; nothing after it is marked.
func (g *groupHandler) marker(sess sarama.ConsumerGroupSession, marks <-chan marked, done chan<- struct{}) {
	defer close(done)
	failed := false
	for m := range marks {
		var errs []error
		for _, d := range m.dones {
			if err := <-d; err != nil {
				errs = append(errs, err)
			}
		}
		if failed {
			continue
		}
		if len(errs) > 0 {
			failed = true
			g.cfg.Logger.Warn("a deferred batch failed: starting again from the last batch marked", "group", g.cfg.Group,
				"topic", m.last.Topic, "partition", m.last.Partition, "offset", m.last.Offset, "err", errors.Join(errs...))
			g.cfg.Observer.Failed(m.last.Topic, m.last.Partition, 1, errors.Join(errs...))
			g.resume()
			continue
		}
		g.mark(sess, m)
	}
}

// deferKey carries a handler's deferred parts in its context (Defer).
type deferKey struct{}

// deferred is what one handler call deferred.
type deferred struct{ dones []<-chan error }

// Defer says, from inside a Handler, that the batch it is applying is finished only when done
// yields (nil: finished; an error: not). The handler returns at once and the consumer goes on
// with the partition's next batch; the batch is marked when done yields nil, batches in their
// order, and a done that yields an error ends the session (the next starts from the last
// batch marked, as after a crash). done must yield exactly once. Defer reports false outside
// a consumer's handler: the caller then waits for done itself.
func Defer(ctx context.Context, done <-chan error) bool {
	d, ok := ctx.Value(deferKey{}).(*deferred)
	if !ok {
		return false
	}
	d.dones = append(d.dones, done)
	return true
}

// fill adds to raw what the batch may still take: what is already buffered (NoWait), or
// what arrives within MaxWait. ok is false when ctx ended meanwhile.
func (g *groupHandler) fill(ctx context.Context, in <-chan *sarama.ConsumerMessage, raw []*sarama.ConsumerMessage) ([]*sarama.ConsumerMessage, bool) {
	// NoWait: a closed channel stands for the timer, so the select falls through at once
	// when nothing is buffered.
	expired := closedTimer
	if g.cfg.MaxWait >= 0 {
		timer := time.NewTimer(g.cfg.MaxWait)
		defer timer.Stop()
		expired = timer.C
	}
	for len(raw) < g.cfg.MaxBatch {
		select {
		case m, ok := <-in:
			if !ok {
				return raw, true
			}
			raw = append(raw, m)
			continue
		case <-ctx.Done():
			return raw, false
		default:
		}
		select {
		case m, ok := <-in:
			if !ok {
				return raw, true
			}
			raw = append(raw, m)
		case <-expired:
			return raw, true
		case <-ctx.Done():
			return raw, false
		}
	}
	return raw, true
}

// closedTimer is a timer channel that has always fired.
var closedTimer = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// TypeHeader is the Kafka header that names a message's event type (infra/kafka.TypeMetadata);
// FactSeqHeader the one that carries a fact's feed sequence (infra/kafka.FactSeqMetadata).
const (
	TypeHeader    = "event_type"
	FactSeqHeader = "fact_seq"
)

// header is the value of a message's header named key, "" when it has none.
func header(m *sarama.ConsumerMessage, key string) string {
	for _, h := range m.Headers {
		if h != nil && string(h.Key) == key {
			return string(h.Value)
		}
	}
	return ""
}

// decodeAccepted decodes m when accept takes its type, applied does not name its fact and
// passed does not say it was applied by its position; any other message is not decoded at
// all.
func decodeAccepted(m *sarama.ConsumerMessage, accept func(string) bool, applied func(uint64) bool,
	passed func(string, int32, int64) bool) (Message, error) {
	if accept != nil || applied != nil || passed != nil {
		t := header(m, TypeHeader)
		skip := accept != nil && t != "" && !accept(t) || passed != nil && passed(m.Topic, m.Partition, m.Offset)
		if !skip && applied != nil {
			if v := header(m, FactSeqHeader); v != "" {
				seq, err := strconv.ParseUint(v, 10, 64)
				skip = err == nil && applied(seq)
			}
		}
		if skip {
			return Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp, raw: m,
				Envelope: events.Envelope{Type: t}}, nil
		}
	}
	msg, err := Decode(m)
	if err == nil && accept != nil && msg.Event != nil && !accept(msg.Envelope.Type) {
		msg.Event = nil
	}
	return msg, err
}

// Decode reads one message as a consumer does: its envelope and, when this build knows the
// type, its event (`tradesvc dlq replay` decodes parked messages with it).
func Decode(m *sarama.ConsumerMessage) (Message, error) {
	msg := Message{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp, raw: m}
	env, err := events.UnmarshalEnvelope(m.Value)
	if err != nil {
		return msg, fmt.Errorf("not an event envelope: %w", err)
	}
	msg.Envelope = env
	ev, err := events.Decode(env)
	if err != nil && !errors.Is(err, events.ErrUnknownType) {
		return msg, fmt.Errorf("undecodable %s %s: %w", env.Type, env.ID, err)
	}
	msg.Event = ev
	return msg, nil
}

// backoff is the wait before retrying a batch or a parking that failed: 200 ms more per
// attempt, at most 5 s.
func backoff(attempt int) time.Duration {
	return min(time.Duration(attempt)*200*time.Millisecond, 5*time.Second)
}

// reconnectDelay is the wait before connecting again to a cluster that was unreachable:
// 200 ms more per attempt, at most 1 s, so that consumers resume within a second or two of the
// broker's return however long it was away (an attempt is one metadata request, and a failed
// one takes sarama's three metadata retries, 750 ms, itself).
func reconnectDelay(attempt int) time.Duration {
	return min(time.Duration(attempt)*200*time.Millisecond, time.Second)
}
