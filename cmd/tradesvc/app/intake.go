package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/wait"
	"tradesvc/projections"
)

// The intake reports (projections.ReportIntake): the projector says where the trading
// projection stands on each partition it consumes, the executor where its relay of the trade
// server's facts stands, about once a second, so that every gateway's change feed can close
// the user streams of the logins whose intake lags (docs/streams.md, "A stream that falls
// behind").

// reportTradingIntake reports the trading projection of this process until ctx ends: for each
// partition of the trading topics it owns, how long it has been behind the log (the consumer
// tracker's dating, with the partitions' ends read just before).
func (a *App) reportTradingIntake(ctx context.Context) error {
	log := a.log.With("role", "projector", "component", "intake report")
	var failing bool
	return everyReport(ctx, func(ctx context.Context) {
		lags := a.consumers.Lag(projections.TradingName)
		if len(lags) == 0 {
			return // no partition claimed (yet): another projector reports them, or none does
		}
		parts := map[string][]int32{}
		for _, l := range lags {
			parts[l.Topic] = append(parts[l.Topic], l.Partition)
		}
		if a.probe != nil {
			// The ends of the partitions, fresh: a consumer that stopped applying is then known
			// to be behind within a report. When Kafka does not answer, what is known stands.
			if err := a.probe.highWaters(ctx, parts); err == nil {
				lags = a.consumers.Lag(projections.TradingName)
			}
		}
		now := a.now()
		behind := map[int32]time.Duration{}
		for _, l := range lags {
			d := time.Duration(0)
			if !l.BehindSince.IsZero() {
				d = max(now.Sub(l.BehindSince), time.Millisecond)
			}
			behind[l.Partition] = max(behind[l.Partition], d)
		}
		report := make([]projections.IntakePart, 0, len(behind))
		for part, d := range behind {
			report = append(report, projections.IntakePart{Part: part, Behind: d})
		}
		failing = a.reportIntake(ctx, log, a.rmPool, projections.IntakeTrading, report, failing)
	})
}

// intakeState is where a feed of this process stands: caught up, or behind since a time.
type intakeState struct {
	mu     sync.Mutex
	behind bool
	since  time.Time
}

// set records a step: caught up, or not (behind since now unless it already was).
func (s *intakeState) set(caughtUp bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if caughtUp {
		s.behind = false
	} else if !s.behind {
		s.behind, s.since = true, now
	}
}

// lag is how long it has been behind (zero: caught up).
func (s *intakeState) lag(now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.behind {
		return 0
	}
	return max(now.Sub(s.since), time.Millisecond)
}

// reportRelayIntake reports this process's relay of the trade server's facts until ctx ends
// (one report for every partition: the facts of every login go through it).
func (a *App) reportRelayIntake(ctx context.Context) error {
	log := a.log.With("role", "relay", "component", "intake report")
	var failing bool
	return everyReport(ctx, func(ctx context.Context) {
		failing = a.reportIntake(ctx, log, a.pool, projections.IntakeRelay,
			[]projections.IntakePart{{Part: projections.AllPartitions, Behind: a.relayIntake.lag(a.now())}}, failing)
	})
}

// everyReport runs report every projections.IntakeReportEvery (each within that time) until
// ctx ends.
func everyReport(ctx context.Context, report func(context.Context)) error {
	wait.Every(ctx, projections.IntakeReportEvery, func() {
		rctx, cancel := context.WithTimeout(ctx, projections.IntakeReportEvery)
		report(rctx)
		cancel()
	})
	return nil
}

// reportIntake writes one report and logs when reports start or stop failing (a report that
// is not written makes the gateways count the source as lagging once it is stale). It returns
// whether this one failed.
func (a *App) reportIntake(ctx context.Context, log *slog.Logger, pool *pgxpool.Pool, source string,
	parts []projections.IntakePart, failing bool) bool {
	err := projections.ReportIntake(ctx, pool, source, parts)
	switch {
	case err != nil && !failing && !errors.Is(err, context.Canceled):
		log.Warn("intake not reported; user streams of its logins close once the last report is stale", "err", err)
	case err == nil && failing:
		log.Info("intake reported again")
	}
	return err != nil
}
