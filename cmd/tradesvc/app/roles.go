package app

import (
	"context"
	"time"

	"golang.org/x/sync/errgroup"

	"tradesvc/command/executor"
	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/batch"
	"tradesvc/projections"
)

// runExecutor sends the queued commands to the trade server and reports liveness; if the
// executor cannot run, the role stops. The trade server's feeds are the relay role's
// (relay.go).
func (a *App) runExecutor(ctx context.Context) error {
	instance := a.instance()
	log := a.log.With("role", "executor")
	// Outcomes are on the latency path of every order: they get an idempotent producer of
	// their own (one request in flight), so an outcome never queues behind a client's command.
	outPub, err := kafka.NewPublisher(a.kcfg, log)
	if err != nil {
		return err
	}
	defer a.closeLogged(log, "outcome publisher", outPub.Close)
	appender, err := kafka.NewAppender(outPub, "executor/"+instance, a.now)
	if err != nil {
		return err
	}
	exec, err := executor.NewExecutor(executor.ExecutorConfig{Brokers: a.cfg.KafkaBrokers,
		Group: a.cfg.TopicPrefix + executor.ExecutorGroup, Topic: a.kcfg.Topic(events.TopicCommands().Name),
		Sarama: a.kcfg.ConsumerConfig(), Port: a.port, Out: appender, Pool: a.pool, Now: a.now, Logger: log,
		DispatchWindow: a.cfg.DispatchWindow, SendTimeout: a.cfg.SendTimeout, DeadLetter: a.deadLetters, Observer: a.consumerObserver(consumerExecutor),
		Early: a.early, Stage: a.metrics.OrderStage, Project: earlyProjector{a}})
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(untilDone(ctx, "heartbeat", func(ctx context.Context) error { return a.executorBeat(ctx, instance, log) })) // settling.go
	g.Go(untilDone(ctx, "command consumer", exec.Run))
	return g.Wait()
}

// projectionSet lists the projections of the projector role with their stable names.
func (a *App) projectionSet(onReferenceChange func(projections.RefScope)) (map[string]projections.Projection, error) {
	ref, err := projections.NewReference(a.rmPool, onReferenceChange)
	if err != nil {
		return nil, err
	}
	market, err := projections.NewMarketHistory(a.ch)
	if err != nil {
		return nil, err
	}
	deals, err := projections.NewDealHistory(a.ch)
	if err != nil {
		return nil, err
	}
	trading, err := a.tradingProjection(false)
	if err != nil {
		return nil, err
	}
	execution, err := projections.NewExecutionQuality(a.ch, a.rmPool, a.log.With("projection", projections.ExecutionQualityName))
	if err != nil {
		return nil, err
	}
	accounts, err := projections.NewAccountDimension(a.ch)
	if err != nil {
		return nil, err
	}
	return map[string]projections.Projection{
		projections.ReferenceName:        ref,
		projections.MarketHistoryName:    market,
		projections.DealHistoryName:      deals,
		projections.TradingName:          trading,
		projections.ExecutionQualityName: execution,
		projections.AccountDimensionName: accounts,
	}, nil
}

// runProjector runs every projection in its own consumer group, under one errgroup: a
// projection that cannot go on (it returns) stops the role.
func (a *App) runProjector(ctx context.Context) error {
	set, err := a.projectionSet(a.invalidateReference)
	if err != nil {
		return err
	}
	src := a.projectionSource()
	g, ctx := errgroup.WithContext(ctx)
	for name, p := range set {
		g.Go(untilDone(ctx, name, func(ctx context.Context) error { return projections.Run(ctx, src, name, p) }))
	}
	g.Go(untilDone(ctx, "trading intake report", a.reportTradingIntake))
	return g.Wait()
}

// projectionSource is where projections read, and where they park what they cannot apply.
func (a *App) projectionSource() projections.Source {
	return projections.Source{Brokers: a.cfg.KafkaBrokers, TopicPrefix: a.cfg.TopicPrefix,
		Sarama: a.kcfg.ConsumerConfig(), Logger: a.log.With("role", "projector"), DeadLetter: a.deadLetters,
		PoisonAttempts: a.cfg.Health.PoisonAttempts, Observe: a.consumerObserver}
}

// invalidateReference tells this process's reference caches that reference data changed.
func (a *App) invalidateReference(scope projections.RefScope) {
	if r := a.refReader.Load(); r != nil {
		r.Changed(scope)
	}
}

// tickBackfillFor is how much of the tick topic a gateway's tail reads when it starts: the
// kline streams resume from ClickHouse's bars, which lag the topic by the market projection's
// paced inserts (3 s) and more under load; a backfill of a fixed count of ticks missed some
// when that lag was longer (a closed 1m bar streamed with 238 of its 240 ticks).
const tickBackfillFor = time.Minute

// tailMarket feeds the in-memory market projection from the tick topic, reconnecting with
// backoff whenever it loses it (readiness shows the tail's state and the quotes' age).
func (a *App) tailMarket(ctx context.Context, market *projections.Market) error {
	return batch.Tail(ctx, batch.TailConfig{Brokers: a.cfg.KafkaBrokers, Topic: a.kcfg.Topic(events.TopicTicks().Name),
		Backfill: 200, BackfillFor: tickBackfillFor, Sarama: a.kcfg.ConsumerConfig(), Logger: a.log.With("role", "gateway", "component", "tick tail"),
		OnState:       func(err error) { a.gw.tailState(err, a.now()) },
		OnUndecodable: func(topic string, _ int32, _ int64, _ error) { a.metrics.TailUndecodable(topic) }},
		market.Handle)
}
