package app

import (
	"testing"

	"tradesvc/command"
	"tradesvc/command/executor"
	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/gateway"
	"tradesvc/projections"
	"tradesvc/projections/audit"
)

// coverages are every place that dispatches on event types or operation kinds.
func coverages() []trading.Coverage {
	return []trading.Coverage{executor.Coverage(), projections.TradingCoverage(), command.Handlers{}.Coverage(),
		gateway.RenderCoverage(), trading.DeriveCoverage(), projections.ExecutionQualityCoverage(), audit.Coverage()}
}

// Every event type of the catalogue and every operation kind is handled or ignored on purpose
// by every place that dispatches on them: a new type or kind fails here, naming each place
// that has not decided.
func TestEveryDispatchDecidesOnEveryEventTypeAndKind(t *testing.T) {
	types, kinds := events.Types(), trading.Kinds()
	if len(types) < 17 || len(kinds) < 6 {
		t.Fatalf("catalogue read wrong: %d types, %d kinds", len(types), len(kinds))
	}
	for _, c := range coverages() {
		for _, m := range c.Missing(types, kinds) {
			t.Error(m)
		}
	}
}

// The check above cannot be fooled: a type or a kind no place knows is reported by every
// place that dispatches on types or kinds.
func TestANewEventTypeOrKindIsReportedByEveryPlace(t *testing.T) {
	for _, c := range coverages() {
		missing := c.Missing([]string{"SomethingNew_v1"}, []trading.Kind{"SOMETHING_NEW"})
		want := 0
		if c.EventsDeclared {
			want++
		}
		if c.KindsDeclared {
			want++
		}
		if len(missing) != want || want == 0 {
			t.Errorf("%s reports %v for a new type and kind", c.Place, missing)
		}
	}
}
