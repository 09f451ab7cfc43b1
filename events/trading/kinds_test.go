package trading

import (
	"slices"
	"testing"
)

// KindNames keeps the kinds its predicate holds for, in the table's order, as strings.
func TestKindNamesFiltersInOrder(t *testing.T) {
	all := KindNames(func(Kind) bool { return true })
	if len(all) != len(Kinds()) || !slices.IsSorted(all) {
		t.Fatalf("all kinds %v: want every kind of the table, sorted", all)
	}
	sent := KindNames(Kind.Sent)
	if slices.Contains(sent, string(KindCloseAll)) || !slices.Contains(sent, string(KindPlaceOrder)) {
		t.Errorf("sent kinds %v: want PLACE_ORDER and not the sweep", sent)
	}
	if got := KindNames(func(Kind) bool { return false }); len(got) != 0 {
		t.Errorf("no kind kept: %v", got)
	}
}
