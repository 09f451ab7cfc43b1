package projections

import (
	"slices"

	"tradesvc/events/trading"
)

// execEvents are the event types the execution-quality projection reads: the commands of the
// operations the executor sends, the executor's records, and the trade-server facts that
// carry an operation's tag.
var execEvents = []string{"OrderRequested_v1", "OrderModifyRequested_v1", "OrderCancelRequested_v1",
	"PositionCloseRequested_v1", "PositionModifyRequested_v1", "ExecutionOutcome_v1", "ExecutionSent_v1",
	"DealAdded_v1", "OrderChanged_v1"}

// Accepts implements Accepting: the other types of the three topics are not even decoded.
func (p *ExecutionQuality) Accepts(eventType string) bool {
	return slices.Contains(execEvents, eventType)
}

// ExecutionQualityCoverage is what projection.clickhouse.execution dispatches on: a sweep is
// not sent itself (its legs are closes with rows of their own); positions and balances carry
// no operation's fill; market and reference data are other projections'.
func ExecutionQualityCoverage() trading.Coverage {
	return trading.Coverage{Place: "projection.clickhouse.execution (projections)", EventsDeclared: true, KindsDeclared: true,
		Events: execEvents,
		IgnoredEvents: []string{"SweepRequested_v1", "PositionChanged_v1", "AccountChanged_v1", "TickReceived_v1",
			"DayStatsUpdated_v1", "SymbolSpecified_v1", "ServerSpecified_v1", "AccountSnapshot_v1"},
		Kinds: []trading.Kind{trading.KindPlaceOrder, trading.KindModifyOrder, trading.KindCancelOrder,
			trading.KindClosePosition, trading.KindModifyPosition},
		IgnoredKinds: []trading.Kind{trading.KindCloseAll}}
}
