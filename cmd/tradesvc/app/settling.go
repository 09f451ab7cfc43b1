package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"tradesvc/command/executor"
	"tradesvc/infra/kafka"
)

// dispatchSweeper builds the gateway's dispatch sweeper: it closes the dispatch window of
// what was queued whether or not an executor runs, claiming each expired attempt in
// cmd.executions (the executor's own arbiter) before it appends its REJECTED -1000.
func (a *App) dispatchSweeper() (*executor.Sweeper, error) {
	host, _ := os.Hostname()
	out, err := kafka.NewAppender(a.pub, fmt.Sprintf("gateway/%s-%d/sweeper", host, os.Getpid()), a.now)
	if err != nil {
		return nil, err
	}
	return executor.NewSweeper(executor.SweeperConfig{Pool: a.pool, Out: out, Now: a.now,
		DispatchWindow: a.cfg.DispatchWindow, Logger: a.log.With("role", "gateway", "component", "dispatch sweeper")})
}

// Link probing: how often a running executor asks the trade server whether it answers and
// records the answer with its heartbeat, and how long it waits for the answer. So the
// gateways answer -5015 within about two seconds of the link going down (their switches are
// read once a second), and accept orders again as soon after it comes back. A probe and its
// record take at most linkProbeTimeout and a write, well inside command.LinkTimeout.
const (
	linkEvery        = time.Second
	linkProbeTimeout = 2 * time.Second
)

// executorBeat records the executor's heartbeat with its trade-server link until ctx ends,
// after every probe.
func (a *App) executorBeat(ctx context.Context, instance string, log *slog.Logger) error {
	t := time.NewTicker(linkEvery)
	defer t.Stop()
	recorded, wasLinked := false, false
	for {
		linked, cause := a.probeLink(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if recorded && linked != wasLinked {
			if linked {
				log.Info("trade server reachable again; TRADE endpoints accept orders")
			} else {
				log.Warn("trade server unreachable; TRADE endpoints answer -5015 until it is back", "err", cause)
			}
		}
		err := a.switches.Heartbeat(ctx, instance, linked)
		if ctx.Err() != nil {
			return nil
		}
		a.exec.heartbeat(a.now(), err)
		if err != nil {
			// The gateways answer -5015 once no heartbeat lands for ExecutorTimeout;
			// readiness says so sooner (executorReport).
			log.Error("executor heartbeat not recorded", "err", err)
		} else {
			recorded, wasLinked = true, linked
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// probeLink asks the trade server for its description: an answer means the link is up.
func (a *App) probeLink(ctx context.Context) (bool, error) {
	pctx, cancel := context.WithTimeout(ctx, linkProbeTimeout)
	defer cancel()
	_, err := a.port.ServerInfo(pctx)
	return err == nil, err
}
