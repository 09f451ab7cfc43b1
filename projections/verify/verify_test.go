package verify

import (
	"encoding/json"
	"testing"
)

func row(kv ...string) map[string]json.RawMessage {
	m := map[string]json.RawMessage{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = json.RawMessage(kv[i+1])
	}
	return m
}

// Compare names every row only one side has and every column that differs, leaves out the
// columns that record how a row was applied, and tells 1.10 from 1.1 (what a client sees).
func TestCompareNamesEachDifferenceAndSkipsTheAppliedColumns(t *testing.T) {
	tables := []Table{{Name: "rm.operations", Applied: []string{"version"}}, {Name: "rm.deals"}}
	live := map[string]Rows{
		"rm.operations": {"operation_id=a": row("operation_id", `"a"`, "status", `"FILLED"`, "version", "3"),
			"operation_id=b": row("operation_id", `"b"`, "status", `"NEW"`, "version", "1")},
		"rm.deals": {"deal_id=1": row("deal_id", "1", "price", "1.10"), "deal_id=2": row("deal_id", "2", "price", "2")},
	}
	replayed := map[string]Rows{
		"rm.operations": {"operation_id=a": row("operation_id", `"a"`, "status", `"FILLED"`, "version", "7"),
			"operation_id=b": row("operation_id", `"b"`, "status", `"CANCELED"`, "version", "1")},
		"rm.deals": {"deal_id=1": row("deal_id", "1", "price", "1.1"), "deal_id=3": row("deal_id", "3", "price", "3")},
	}
	got := Compare(tables, live, replayed)
	want := []string{
		`rm.operations operation_id=b: status live "NEW", replayed "CANCELED"`,
		`rm.deals deal_id=1: price live 1.10, replayed 1.1`,
		`rm.deals deal_id=2: only in the live read model: {"deal_id":2,"price":2}`,
		`rm.deals deal_id=3: only in the replayed read model: {"deal_id":3,"price":3}`,
	}
	if len(got) != len(want) {
		t.Fatalf("%d differences, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("difference %d: %s, want %s", i, got[i], want[i])
		}
	}
	if d := Compare(tables, live, live); len(d) != 0 {
		t.Errorf("a table compared with itself: %v", d)
	}
}
