package projections

import "testing"

// A fresh batch's derived columns are lined up with its commands' rows by operation id; a
// command whose operation has no change gets the zero change, whose empty status the insert
// reads as the column's default (insertOperations), and a change no command starts is left out.
func TestAlignDerivedLinesChangesUpWithTheCommands(t *testing.T) {
	a, b, c := "op-a", "op-b", "op-c"
	derived := []opChange{{OperationID: "op-b", Version: 2}, {OperationID: "op-x", Version: 9}, {OperationID: "op-a", Version: 1}}
	got := alignDerived([]*string{&a, nil, &c, &b}, derived)
	if len(got) != 4 {
		t.Fatalf("%d rows for 4 commands", len(got))
	}
	for i, want := range []opChange{{OperationID: "op-a", Version: 1}, {}, {}, {OperationID: "op-b", Version: 2}} {
		if got[i].OperationID != want.OperationID || got[i].Version != want.Version {
			t.Errorf("row %d: %+v, want %+v", i, got[i], want)
		}
	}
	if statuses := derivedArgs(got)[1].([]string); statuses[1] != "" || statuses[2] != "" {
		t.Errorf("a command with nothing derived has status %q and %q, want empty (the column's default)", statuses[1], statuses[2])
	}
}
