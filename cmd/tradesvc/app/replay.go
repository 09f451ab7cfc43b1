package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"tradesvc/infra/config"
	"tradesvc/projections"
)

var projectionNames = []string{projections.ReferenceName, projections.MarketHistoryName, projections.DealHistoryName,
	projections.TradingName, projections.ExecutionQualityName, projections.AccountDimensionName}

// ProjectionNames lists the projections `tradesvc replay` can rebuild.
func ProjectionNames() string { return strings.Join(projectionNames, ", ") }

// Replay rebuilds projection name from the log (see projections.Replay).
func Replay(ctx context.Context, cfg config.Config, log *slog.Logger, name string) (n int, err error) {
	if !slices.Contains(projectionNames, name) {
		return 0, fmt.Errorf("unknown projection %q (want one of %s)", name, ProjectionNames())
	}
	cfg.Roles = []string{config.RoleProjector}
	a, err := New(ctx, cfg, log)
	if err != nil {
		return 0, err
	}
	defer func() { err = errors.Join(err, a.Close()) }()
	set, err := a.projectionSet(nil)
	if err != nil {
		return 0, err
	}
	if name == projections.TradingName {
		if set[name], err = a.tradingProjection(true); err != nil {
			return 0, err
		}
	}
	return projections.Replay(ctx, a.projectionSource(), name, set[name])
}
