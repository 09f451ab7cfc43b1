package projections

import "tradesvc/events/trading"

// Accepts implements Accepting: the events with a statement or a fact table; the rest is not
// decoded.
func (t *Trading) Accepts(eventType string) bool {
	_, ok := statements[eventType]
	return ok || factTables[eventType] != nil
}

// TradingCoverage is what projection.trading dispatches on: the events it has a statement for
// (every command, the outcomes, the trade-server facts) and the kinds those commands start.
// Market and reference data are other projections'.
func TradingCoverage() trading.Coverage {
	c := trading.Coverage{Place: "projection.trading (projections)", EventsDeclared: true, KindsDeclared: true,
		IgnoredEvents: []string{"ExecutionSent_v1", "TickReceived_v1", "DayStatsUpdated_v1", "SymbolSpecified_v1",
			"ServerSpecified_v1", "AccountSnapshot_v1"}}
	for t := range factTables {
		c.Events = append(c.Events, t)
		if k, ok := trading.KindOf(t); ok {
			c.Kinds = append(c.Kinds, k)
		}
	}
	for t := range statements {
		c.Events = append(c.Events, t)
	}
	return c
}
