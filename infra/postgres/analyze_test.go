package postgres

import "testing"

// The Analyzer analyzes at 200, 1,000, 5,000 and 25,000 rows added, and not after: past them
// autovacuum keeps the statistics. A batch that jumps over steps starts one analyze, and a
// step crossed while one runs is due once it ended.
func TestAnalyzerIsDueAtEachStepUpTo25000Rows(t *testing.T) {
	a := NewAnalyzer(nil, nil, "t")
	var dueAt []int64
	for range 1_000_000 / 50 {
		if a.due(50) {
			dueAt = append(dueAt, a.added)
			a.running = false // as the analyze's end does
		}
	}
	if want := []int64{200, 1000, 5000, 25000}; len(dueAt) != len(want) || dueAt[0] != want[0] || dueAt[1] != want[1] ||
		dueAt[2] != want[2] || dueAt[3] != want[3] {
		t.Fatalf("due at %v rows, want %v", dueAt, want)
	}

	b := NewAnalyzer(nil, nil, "t")
	if !b.due(6000) { // past 200, 1,000 and 5,000 at once
		t.Fatal("6,000 rows at once: not due")
	}
	if b.due(30000) {
		t.Fatal("due while an analyze is running")
	}
	b.running = false
	if !b.due(1) {
		t.Fatal("the 25,000 step, crossed while an analyze ran, is not due once it ended")
	}
	b.running = false
	if b.due(1_000_000) {
		t.Fatal("due past 25,000 rows, the last step")
	}
}
