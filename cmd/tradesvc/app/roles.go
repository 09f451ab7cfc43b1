package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sync/errgroup"

	"tradesvc/command/executor"
	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/batch"
	"tradesvc/projections"
)

// heartbeatEvery is how often a running executor tells the gateways it is alive; well
// inside command.ExecutorTimeout.
const heartbeatEvery = 5 * time.Second

// runExecutor sends the queued commands to the trade server, relays the trade server's feeds
// to the log and reports liveness; if the executor cannot run, the role stops.
func (a *App) runExecutor(ctx context.Context) error {
	cursors, err := executor.NewPGCursors(a.pool)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	instance := fmt.Sprintf("%s-%d", host, os.Getpid())
	log := a.log.With("role", "executor")
	// Outcomes are on the latency path of every order; the relay appends market data all
	// the time. Each gets its own idempotent producer (one request in flight each), so an
	// outcome never queues behind a batch of ticks, nor a client's command behind either.
	outPub, err := kafka.NewPublisher(a.kcfg, log)
	if err != nil {
		return err
	}
	defer outPub.Close()
	appender, err := kafka.NewAppender(outPub, "executor/"+instance, a.now)
	if err != nil {
		return err
	}
	relayPub, err := kafka.NewPublisher(a.kcfg, log)
	if err != nil {
		return err
	}
	defer relayPub.Close()
	relayAppender, err := kafka.NewAppender(relayPub, "executor/"+instance, a.now)
	if err != nil {
		return err
	}
	relay, err := executor.NewRelay(executor.RelayConfig{OnAppended: a.metrics.RelayAppended}, a.port,
		relayAppender, cursors, log, a.now)
	if err != nil {
		return err
	}
	exec, err := executor.NewExecutor(executor.ExecutorConfig{Brokers: a.cfg.KafkaBrokers,
		Group: a.cfg.TopicPrefix + executor.ExecutorGroup, Topic: a.kcfg.Topic(events.TopicCommands().Name),
		Sarama: a.kcfg.ConsumerConfig(), Port: a.port, Out: appender, Pool: a.pool, Now: a.now, Logger: log,
		DispatchWindow: a.cfg.DispatchWindow})
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		for {
			if err := a.switches.Heartbeat(ctx, instance); err != nil && ctx.Err() == nil {
				log.Warn("heartbeat", "err", err)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(heartbeatEvery):
			}
		}
	})
	g.Go(func() error { return relay.Run(ctx) })
	g.Go(func() error {
		if err := exec.Run(ctx); err != nil {
			return fmt.Errorf("executor: %w", err)
		}
		return nil
	})
	return g.Wait()
}

// projectionSet lists the projections of the projector role with their stable names.
func (a *App) projectionSet(onReferenceChange func()) (map[string]projections.Projection, error) {
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
	return map[string]projections.Projection{
		projections.ReferenceName:     ref,
		projections.MarketHistoryName: market,
		projections.DealHistoryName:   deals,
		projections.TradingName:       trading,
	}, nil
}

// runProjector runs every projection in its own consumer group.
func (a *App) runProjector(ctx context.Context) error {
	set, err := a.projectionSet(a.invalidateReference)
	if err != nil {
		return err
	}
	src := a.projectionSource()
	errs := make(chan error, len(set))
	for name, p := range set {
		go func() { errs <- projections.Run(ctx, src, name, p) }()
	}
	var first error
	for range set {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (a *App) projectionSource() projections.Source {
	return projections.Source{Brokers: a.cfg.KafkaBrokers, TopicPrefix: a.cfg.TopicPrefix,
		Sarama: a.kcfg.ConsumerConfig(), Logger: a.log.With("role", "projector"), OnBatch: a.metrics.ProjectionBatch}
}

// invalidateReference tells this process's symbol cache that reference data changed.
func (a *App) invalidateReference() {
	if r := a.refReader.Load(); r != nil {
		r.Invalidate()
	}
}

// tailMarket feeds the in-memory market projection from the tick topic.
func (a *App) tailMarket(ctx context.Context, market *projections.Market) error {
	return batch.Tail(ctx, batch.TailConfig{Brokers: a.cfg.KafkaBrokers, Topic: a.kcfg.Topic(events.TopicTicks().Name),
		Backfill: 200, Sarama: a.kcfg.ConsumerConfig()}, market.Handle)
}
