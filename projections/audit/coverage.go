package audit

import "tradesvc/events/trading"

// Coverage is what the audit's stories dispatch on: every command (a sweep's story names its
// legs), the executor's records, and the deals that fill an operation. Orders, positions
// and balances are found by ticket but tell no step of their own; market and reference data
// are no operation's.
func Coverage() trading.Coverage {
	return trading.Coverage{Place: "tradesvc audit (projections/audit)", EventsDeclared: true, KindsDeclared: true,
		Events: []string{"OrderRequested_v1", "OrderModifyRequested_v1", "OrderCancelRequested_v1",
			"PositionCloseRequested_v1", "PositionModifyRequested_v1", "SweepRequested_v1", "ExecutionOutcome_v1",
			"ExecutionSent_v1", "DealAdded_v1"},
		IgnoredEvents: []string{"OrderChanged_v1", "PositionChanged_v1", "AccountChanged_v1", "TickReceived_v1",
			"DayStatsUpdated_v1", "SymbolSpecified_v1", "ServerSpecified_v1", "AccountSnapshot_v1"},
		Kinds: []trading.Kind{trading.KindPlaceOrder, trading.KindModifyOrder, trading.KindCancelOrder,
			trading.KindClosePosition, trading.KindModifyPosition, trading.KindCloseAll}}
}
