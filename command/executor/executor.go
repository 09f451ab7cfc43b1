// Package executor is the only sender of trade requests: it drains the command topic, records
// "sent" before each send, sends each operation to the trade server once and appends what
// became of it. (The trade server's own feed into the log is the relay, infra/mt5/relay.)
package executor

import (
	"cmp"
	"context"
	"log/slog"
	"time"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/infra/check"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/mt5"
)

// ExecutorGroup is the executor's consumer group before the deployment prefix. It never
// changes: renaming it would re-read the whole command log (every command would then be
// found in cmd.executions and skipped, but only after a long replay).
const ExecutorGroup = "executor"

// ExecutorConfig configures the executor. Brokers, Group, Topic, Sarama, Port, Out, Pool
// and Now are required.
type ExecutorConfig struct {
	// Brokers to consume the command topic from.
	Brokers []string
	// Group is the consumer group, prefix included (prefix + ExecutorGroup).
	Group string
	// Topic is the physical name of the command topic (prefix + events.TopicCommands().Name).
	Topic string
	// Sarama is the base consumer configuration (kafka.Config.ConsumerConfig()).
	Sarama *sarama.Config
	// Port is the trade server.
	Port mt5.TradeServer
	// Out appends the execution events (to events.TopicExecutions()).
	Out Appender
	// Pool is the command-side Postgres pool (synchronous commit) holding cmd.executions.
	Pool *pgxpool.Pool
	// Now is the clock of the dispatch window and of the events' times.
	Now func() time.Time
	// Logger defaults to slog.Default().
	Logger *slog.Logger

	// DispatchWindow is how long after it was appended a command may still be sent
	// (default 60s); later it is refused, REJECTED -1000, without being sent.
	DispatchWindow time.Duration
	// SendTimeout bounds one Send (default 10s); running out counts as the trade server not
	// answering in time. With SettleGrace it is an attempt's send deadline: an attempt whose
	// tag the trade server holds nowhere after it is settled as not executed (settle.go).
	SendTimeout time.Duration
	// SettleGrace is added to SendTimeout for the send deadline (default 1s), for the clocks
	// of the executor and the trade server.
	SettleGrace time.Duration
	// SettleEvery is how often the background settling asks the trade server about the
	// attempts left unsettled (default 1s).
	SettleEvery time.Duration
	// MaxBatch caps the commands read at once from one partition (default 500).
	MaxBatch int
	// Concurrency is how many accounts of one batch are served at once (default 16); each
	// account's operations are sent one after the other, in order.
	Concurrency int
	// OnOutcome, when set, is told of every outcome once it is in the log: the operation
	// kind, its status, and how long the executor took from picking it up to deciding it
	// (metrics).
	OnOutcome func(kind, status string, took time.Duration)
	// DeadLetter parks a command that cannot be decoded (commands.v1.dlq), so it is never
	// skipped unseen; without it such a command stops the executor. A command whose handling
	// fails is never parked: it is retried until it is decided (the executor's outcome).
	DeadLetter batch.DeadLetterer
	// Observer is told of the consumer's claims, progress and failures (readiness).
	Observer batch.Observer
	// Early, when set, is shared with the gateway of this process, whose records then carry
	// this executor's claims of the commands it will read (early.go).
	Early *EarlyClaims
	// Stage, when set, is told how long the stages of the order path the executor runs took
	// (metrics): "picked" (from the command's append), "claimed", "sent", "appended" (from
	// the decision).
	Stage func(stage string, took time.Duration)
	// Project, when set, is the trading projection of this process: an outcome appended on its
	// own is handed to it before its append, and applied by it as soon as the append is
	// acknowledged, without the consumer's fetch (projections.Trading.Early; Out must then be
	// a PositionedAppender, else it is not used; flush.go).
	Project Projector
}

// Projector is the trading projection of the executor's process (projections.Trading). Early
// begins applying env, about to be appended to partition of topic (the physical name); the
// landed it returns (nil: not applied early) must be told once where env landed, or the
// append's error. Appended is told where every outcome landed.
type Projector interface {
	Early(ctx context.Context, topic string, partition int32, env events.Envelope) (landed func(partition int32, offset int64, err error))
	Appended(topic string, partition int32, offset int64)
}

// PositionedAppender is an Appender that also says where a record goes and where it landed
// (infra/kafka.Appender): what Project needs.
type PositionedAppender interface {
	Appender
	Wrap(evs ...events.Event) ([]events.Envelope, error)
	PartitionOf(topic events.Topic, key string) (string, int32)
	AppendEnvelopesAt(ctx context.Context, topic events.Topic, envs ...events.Envelope) ([]kafka.Position, error)
}

// Validate reports every missing dependency and bad setting at once.
func (c ExecutorConfig) Validate() error {
	var p check.Problems
	p.If(len(c.Brokers) == 0, "executor: no brokers")
	p.If(c.Group == "", "executor: no consumer group")
	p.If(c.Topic == "", "executor: no command topic")
	p.If(c.Sarama == nil, "executor: no sarama config")
	p.If(c.Port == nil, "executor: no trade server")
	p.If(c.Out == nil, "executor: no appender")
	p.If(c.Pool == nil, "executor: no Postgres pool")
	p.If(c.Now == nil, "executor: no clock")
	p.If(c.DispatchWindow < 0 || c.SendTimeout < 0 || c.MaxBatch < 0 || c.Concurrency < 0 || c.SettleGrace < 0 || c.SettleEvery < 0,
		"executor: negative window, timeout, batch, concurrency or settling bound")
	return p.Err()
}

func (c *ExecutorConfig) defaults() {
	c.DispatchWindow = cmp.Or(c.DispatchWindow, 60*time.Second)
	c.SendTimeout = cmp.Or(c.SendTimeout, 10*time.Second)
	c.SettleGrace = cmp.Or(c.SettleGrace, time.Second)
	c.SettleEvery = cmp.Or(c.SettleEvery, time.Second)
	c.MaxBatch = cmp.Or(c.MaxBatch, 500)
	c.Concurrency = cmp.Or(c.Concurrency, 16)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	if c.Stage == nil {
		c.Stage = func(string, time.Duration) {}
	}
}

// Executor drains the command topic: it sends each operation to the trade server once,
// records "sent" before sending, and appends what became of it, with the facts the send
// caused, as one ExecutionOutcome_v1 on the executions topic. A command redelivered after a crash is
// reconciled with the trade server by its tag, never sent blindly twice (docs/trading.md,
// "The executor").
type Executor struct {
	cfg   ExecutorConfig
	store *executions
	flush *flusher
	log   *slog.Logger
}

// NewExecutor builds an executor.
func NewExecutor(cfg ExecutorConfig) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.defaults()
	store, err := newExecutions(cfg.Pool, cfg.Logger)
	if err != nil {
		return nil, err
	}
	x := &Executor{cfg: cfg, store: store, log: cfg.Logger,
		flush: newFlusher(cfg.Out, store, cfg.Logger, cfg.OnOutcome, cfg.Stage)}
	if pa, ok := cfg.Out.(PositionedAppender); ok && cfg.Project != nil {
		x.flush.project, x.flush.positioned = cfg.Project, pa
	}
	if cfg.Early != nil {
		x.cfg.Observer = earlyObserver{Observer: cmp.Or[batch.Observer](cfg.Observer, batch.NopObserver{}), x: x}
	}
	return x, nil
}

// Run consumes commands until ctx ends, then returns nil. A batch is marked consumed only
// once every operation in it has its outcome in the log; an operation interrupted by the
// shutdown is left to the next owner of the partition, which reconciles it. Beside the
// consumer it settles the attempts left unsettled (settle.go).
func (x *Executor) Run(ctx context.Context) error {
	flushed, consumed, settled := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(flushed)
		x.flush.run(ctx, consumed)
	}()
	sctx, stopSettling := context.WithCancel(ctx)
	go func() {
		defer close(settled)
		x.settleLoop(sctx)
	}()
	err := batch.Run(ctx, batch.Config{Brokers: x.cfg.Brokers, Group: x.cfg.Group, Topics: []string{x.cfg.Topic},
		MaxBatch: x.cfg.MaxBatch, MaxWait: batch.NoWait, Sarama: x.cfg.Sarama, Logger: x.log,
		DeadLetter: x.cfg.DeadLetter, Observer: x.cfg.Observer}, x.handle)
	stopSettling() // the consumer may have stopped on its own: the flusher must not outlive both
	<-settled
	close(consumed)
	<-flushed
	x.store.drain()
	return err
}

// Appender appends events to a topic of the log durably (acknowledged by all in-sync
// replicas) and in order per partition key, before it returns.
type Appender interface {
	Append(ctx context.Context, topic events.Topic, evs ...events.Event) error
}
