package executor

import "tradesvc/events/trading"

// Coverage is what the executor dispatches on: the command events it sends (its requests
// table) and the kinds they start. A sweep is sent as its legs; every other event it never
// sees on its topic, or leaves to the projections.
func Coverage() trading.Coverage {
	c := trading.Coverage{Place: "executor (command/executor)", EventsDeclared: true, KindsDeclared: true,
		IgnoredEvents: []string{"SweepRequested_v1", "ExecutionSent_v1", "ExecutionOutcome_v1", "DealAdded_v1",
			"OrderChanged_v1", "PositionChanged_v1", "AccountChanged_v1", "TickReceived_v1", "DayStatsUpdated_v1",
			"SymbolSpecified_v1", "ServerSpecified_v1", "AccountSnapshot_v1"},
		IgnoredKinds: []trading.Kind{trading.KindCloseAll}}
	for t := range requests {
		c.Events = append(c.Events, t)
		if k, ok := trading.KindOf(t); ok {
			c.Kinds = append(c.Kinds, k)
		}
	}
	return c
}
