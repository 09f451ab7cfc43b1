package projections

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5/pgconn"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/postgres"
	"tradesvc/infra/wait"
)

// Projection is a consumer of the log that applies batches to a read model.
type Projection interface {
	// Topics the projection reads.
	Topics() []events.Topic
	// Apply applies one batch of one partition, idempotently.
	Apply(ctx context.Context, msgs []batch.Message) error
}

// Batching is implemented by projections that want batches gathered for longer than the
// consumer's default (50 ms), such as ClickHouse tables, which want few large inserts: the
// batches of all their partitions are then merged into one write at most every MaxWait
// (combine.go), or, with batch.NoWait, each batch goes at once.
type Batching interface {
	// MaxWait is how long a batch may wait to fill once it has a message.
	MaxWait() time.Duration
}

// pacedFill is how long a consumer of a paced projection gathers its partition's batch
// before handing it to the combiner, which paces the writes.
const pacedFill = 100 * time.Millisecond

// Trailing is implemented by projections that read some of their topics a little behind
// (batch.Config.Trailing): those topics' partitions are fetched at most once per every, as
// their messages wait that long before they are applied anyway.
type Trailing interface {
	Trailing() (topics []events.Topic, every time.Duration)
}

// Positioned is implemented by projections that store the log positions they applied in
// the same transaction as their writes (Positions): every session starts from them.
type Positioned interface {
	Positions() batch.Positions
}

// Accepting is implemented by projections that apply only some of their topics' event
// types: the others are not even decoded (the type travels in a Kafka header).
type Accepting interface {
	Accepts(eventType string) bool
}

// Deduplicating is implemented by projections that remember the trade-server facts they
// applied: a copy of one (the relay's copy of a fact an outcome carried) is not decoded.
type Deduplicating interface {
	AppliedFact(seq uint64) bool
}

// Passing is implemented by projections that apply some messages before their consumer reads
// them (the trading projection's early outcomes): one whose partition's position is past it
// is not decoded.
type Passing interface {
	Passed(topic string, partition int32, offset int64) bool
}

// Pinger is implemented by projections that can tell whether their store answers. A batch
// that fails while the store does not answer is an outage, retried until the store is back;
// only a failure that repeats while it answers can make a message poison.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Watching is implemented by projections with work of their own beside their batches (the
// trading projection checks that Postgres kept its asynchronous commits): Run runs Watch
// beside the consumer, and waits for it to return.
type Watching interface {
	Watch(ctx context.Context)
}

// Source says where projections read from, and where they park what they cannot apply.
type Source struct {
	Brokers     []string
	TopicPrefix string
	Sarama      *sarama.Config
	Logger      *slog.Logger
	// DeadLetter parks the messages a projection can never apply (<topic>.dlq); without it
	// such a message stops the projection with an error.
	DeadLetter batch.DeadLetterer
	// PoisonAttempts is how many times a message may fail the same way, its store
	// answering, before it is parked (default 5).
	PoisonAttempts int
	// Observe, when set, gives the observer of one projection's consumer (readiness and
	// metrics).
	Observe func(projection string) batch.Observer
}

// Run consumes for projection p under its stable consumer-group name until ctx ends.
func Run(ctx context.Context, src Source, name string, p Projection) error {
	topics := make([]string, 0, len(p.Topics()))
	for _, t := range p.Topics() {
		topics = append(topics, src.TopicPrefix+t.Name)
	}
	var maxWait, fetchWait time.Duration
	var fetchMin int32
	apply := p.Apply
	var paced *combiner
	if b, ok := p.(Batching); ok {
		maxWait = b.MaxWait()
		if maxWait > pacedFill {
			paced = &combiner{pace: maxWait}
			apply = func(ctx context.Context, msgs []batch.Message) error { return paced.combine(ctx, msgs, p.Apply) }
			// Off the latency path: a fetch waits for 64 KiB or half the pace.
			maxWait, fetchWait, fetchMin = pacedFill, maxWait/2, 64<<10
		}
	}
	cfg := batch.Config{
		Brokers:    src.Brokers,
		Group:      src.TopicPrefix + name,
		Topics:     topics,
		MaxBatch:   5000,
		MaxWait:    maxWait,
		FetchWait:  fetchWait,
		FetchMin:   fetchMin,
		Sarama:     src.Sarama,
		Logger:     src.Logger.With("projection", name),
		DeadLetter: src.DeadLetter,
		Transient:  IsStoreUnavailable,
	}
	if src.DeadLetter != nil {
		cfg.MaxAttempts = src.PoisonAttempts
		if cfg.MaxAttempts == 0 {
			cfg.MaxAttempts = 5
		}
	}
	if pg, ok := p.(Pinger); ok {
		cfg.Healthy = pg.Ping
	}
	if pp, ok := p.(Positioned); ok {
		cfg.Positions = pp.Positions()
	}
	if a, ok := p.(Accepting); ok {
		cfg.Accept = a.Accepts
	}
	if d, ok := p.(Deduplicating); ok {
		cfg.Applied = d.AppliedFact
	}
	if ps, ok := p.(Passing); ok {
		cfg.Passed = ps.Passed
	}
	if tr, ok := p.(Trailing); ok {
		topics, every := tr.Trailing()
		for _, t := range topics {
			cfg.Trailing = append(cfg.Trailing, src.TopicPrefix+t.Name)
		}
		cfg.TrailFor = every
	}
	if src.Observe != nil {
		cfg.Observer = src.Observe(name)
	}
	if w, ok := p.(Watching); ok {
		defer wait.Beside(ctx, w.Watch)()
	}
	err := batch.Run(ctx, cfg, apply)
	// No write of the projection outlives it: the rounds owed to consumers that stopped.
	if paced != nil {
		paced.rounds().Wait()
	}
	return err
}

// IsStoreUnavailable reports the Postgres errors that say the database is out of reach or
// refusing work for now (connection failures, shutdown, overload, serialization conflicts),
// which are retried and never make a message poison.
func IsStoreUnavailable(err error) bool {
	if postgres.NeverSent(err) || pgconn.Timeout(err) {
		return true
	}
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && postgres.ServerGone(pgErr.Code)
}
