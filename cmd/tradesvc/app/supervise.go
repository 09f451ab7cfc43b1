package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"golang.org/x/sync/errgroup"

	"tradesvc/command"
	"tradesvc/gateway"
	"tradesvc/infra/kafka/batch"
	"tradesvc/projections"
)

// untilDone adapts a long-lived part of a role for an errgroup: returning, even without an
// error, while ctx is alive is a failure that stops the role (and so the process), never a
// goroutine that quietly ended.
func untilDone(ctx context.Context, name string, run func(context.Context) error) func() error {
	return func() error {
		err := run(ctx)
		if ctx.Err() != nil && (err == nil || errors.Is(err, context.Canceled)) {
			return nil
		}
		if err == nil {
			err = errors.New("stopped on its own")
		}
		return fmt.Errorf("%s: %w", name, err)
	}
}

// serveGateway runs the gateway's long-lived parts under one errgroup: the HTTPS server,
// the tick tail (in-memory quotes), the change feed (RESULT waits and user streams), the
// purge of expired idempotency records and the dispatch sweeper (the window of what it
// queued closes even while no executor runs). Any of them ending ends the others and the
// role: a gateway whose listener failed does not linger with its tail running, and a tail
// that cannot go on does not leave the gateway serving its last quotes.
func (a *App) serveGateway(ctx context.Context, srv *gateway.Server, ln net.Listener, market *projections.Market,
	feed *projections.ChangeFeed, records *command.Records) error {
	a.gw.market.Store(market)
	a.gw.feed.Store(feed)
	sweeper, err := a.dispatchSweeper()
	if err != nil {
		return err
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(untilDone(ctx, "dispatch sweeper", sweeper.Run))
	g.Go(untilDone(ctx, "https server", func(ctx context.Context) error { return srv.Serve(ctx, ln) }))
	g.Go(untilDone(ctx, "tick tail", func(ctx context.Context) error { return a.tailMarket(ctx, market) }))
	g.Go(untilDone(ctx, "change feed", feed.Run))
	g.Go(untilDone(ctx, "idempotency purge", func(ctx context.Context) error {
		a.purgeRecords(ctx, records)
		return nil
	}))
	return g.Wait()
}

// klineSeedTimeout bounds the read of the stored bars when a gateway starts.
const klineSeedTimeout = 15 * time.Second

// seedKlines resumes the kline streams from the stored bars (ClickHouse). A failure is not
// fatal: the gateway serves, and its kline streams start with the ticks it sees, as they did
// before bars were seeded; the warning says so.
func (a *App) seedKlines(ctx context.Context, srv *gateway.Server) {
	ctx, cancel := context.WithTimeout(ctx, klineSeedTimeout)
	defer cancel()
	n, err := srv.SeedKlines(ctx)
	if err != nil {
		a.log.Warn("gateway: kline streams not resumed from the stored bars; their current bars start with this process",
			"role", "gateway", "err", err)
		return
	}
	a.log.Debug("gateway: kline streams resumed from the stored bars", "role", "gateway", "symbols", n)
}

// consumerObserver is the observer of one consumer: readiness (the consumer tracker) and
// the projection metrics.
func (a *App) consumerObserver(name string) batch.Observer {
	return observers{a.consumers.Observer(name), metricsObserver{a: a, name: name}}
}

// closeLogged closes something a role opened, logging what could not be closed (a producer
// that could not deliver what it held).
func (a *App) closeLogged(log *slog.Logger, what string, c func() error) {
	if err := c(); err != nil {
		log.Error("close "+what, "err", err)
	}
}

type observers []batch.Observer

func (o observers) Claimed(topic string, partition int32, next, highWater int64) {
	for _, x := range o {
		x.Claimed(topic, partition, next, highWater)
	}
}

func (o observers) Released(topic string, partition int32) {
	for _, x := range o {
		x.Released(topic, partition)
	}
}

func (o observers) Applied(topic string, partition int32, events int, lastOffset int64, logTime time.Time, highWater int64) {
	for _, x := range o {
		x.Applied(topic, partition, events, lastOffset, logTime, highWater)
	}
}

func (o observers) Failed(topic string, partition int32, attempt int, err error) {
	for _, x := range o {
		x.Failed(topic, partition, attempt, err)
	}
}

func (o observers) Disconnected(err error) {
	for _, x := range o {
		x.Disconnected(err)
	}
}

func (o observers) Parked(p batch.Parked) {
	for _, x := range o {
		x.Parked(p)
	}
}

// metricsObserver feeds the projection batch metrics (tradesvc_projection_*).
type metricsObserver struct {
	a    *App
	name string
}

func (metricsObserver) Claimed(string, int32, int64, int64) {}
func (metricsObserver) Released(string, int32)              {}
func (metricsObserver) Disconnected(error)                  {}
func (metricsObserver) Parked(batch.Parked)                 {} // counted by the consumer tracker's onParked

func (m metricsObserver) Applied(topic string, partition int32, events int, lastOffset int64, _ time.Time, _ int64) {
	m.a.metrics.ProjectionBatch(m.name, topic, partition, events, lastOffset, nil)
}

func (m metricsObserver) Failed(topic string, partition int32, _ int, err error) {
	m.a.metrics.ProjectionBatch(m.name, topic, partition, 0, 0, err)
}
