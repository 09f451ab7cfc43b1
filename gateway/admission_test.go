package gateway_test

import (
	"errors"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/gateway"
	"tradesvc/query"
)

// fakeClock is a settable clock for admission control.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func decided(opID string) query.Change {
	return query.Change{Kind: query.ChangeOperation, OperationID: opID,
		Operation: &query.OperationState{Derived: trading.Derived{Status: "FILLED", Decided: true}}}
}

func TestAdmissionInFlightBound(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 2, RiskFactor: 2, MaxAge: time.Hour}, clk.now)
	if r := a.Admit(trading.KindPlaceOrder); r != "" {
		t.Fatalf("empty: shed for %q", r)
	}
	a.Queued("a")
	a.Queued("b")
	if r := a.Admit(trading.KindPlaceOrder); r != "in-flight" {
		t.Fatalf("2 in flight, bound 2: reason %q, want in-flight", r)
	}
	for _, k := range []trading.Kind{trading.KindCancelOrder, trading.KindClosePosition, trading.KindCloseAll} {
		if r := a.Admit(k); r != "" {
			t.Errorf("%s with 2 in flight, risk bound 4: shed for %q", k, r)
		}
	}
	a.Queued("c")
	a.Queued("d")
	if r := a.Admit(trading.KindCancelOrder); r != "in-flight" {
		t.Fatalf("4 in flight, risk bound 4: reason %q, want in-flight", r)
	}
	// A state that is not the outcome does not end the wait; the outcome does.
	a.Observe(query.Change{Kind: query.ChangeOperation, OperationID: "a",
		Operation: &query.OperationState{Derived: trading.Derived{Status: "NEW"}}})
	a.Observe(query.Change{Kind: query.ChangeDeal, OperationID: "b"})
	if got := a.State().InFlight; got != 4 {
		t.Fatalf("after undecided states: %d in flight, want 4", got)
	}
	a.Observe(decided("a"))
	a.Observe(decided("b"))
	a.Observe(decided("unknown")) // another gateway's operation
	if got := a.State().InFlight; got != 2 {
		t.Fatalf("after 2 outcomes: %d in flight, want 2", got)
	}
	if r := a.Admit(trading.KindPlaceOrder); r != "in-flight" {
		t.Fatalf("2 in flight again: reason %q, want in-flight", r)
	}
	a.Observe(decided("c"))
	if r := a.Admit(trading.KindPlaceOrder); r != "" {
		t.Fatalf("1 in flight: shed for %q", r)
	}
}

func TestAdmissionLagging(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 100, MaxAge: 100 * time.Millisecond, StaleLimit: 2,
		RiskFactor: 2, Forget: time.Minute}, clk.now)
	a.Queued("old1")
	a.Queued("old2")
	clk.t = clk.t.Add(150 * time.Millisecond)
	a.Queued("young")
	if r := a.Admit(trading.KindPlaceOrder); r != "lagging" {
		t.Fatalf("2 operations older than 100ms: reason %q, want lagging", r)
	}
	// Risk-reducing: twice the age and twice the count.
	if r := a.Admit(trading.KindClosePosition); r != "" {
		t.Fatalf("close: shed for %q", r)
	}
	clk.t = clk.t.Add(100 * time.Millisecond) // old ones 250ms, young 100ms
	if r := a.Admit(trading.KindClosePosition); r != "" {
		t.Fatalf("close with 2 operations past 200ms (limit 4): shed for %q", r)
	}
	a.Observe(decided("old1"))
	if r := a.Admit(trading.KindPlaceOrder); r != "" {
		t.Fatalf("one late operation left (limit 2): shed for %q", r)
	}
	// Re-queued (a retry that queued again) counts from its new time only.
	a.Queued("old2")
	if r := a.Admit(trading.KindPlaceOrder); r != "" {
		t.Fatalf("re-queued operation is young: shed for %q", r)
	}
}

func TestAdmissionForgetsUnseenOutcomes(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 1, Forget: 10 * time.Second}, clk.now)
	a.Queued("lost")
	if r := a.Admit(trading.KindPlaceOrder); r != "in-flight" {
		t.Fatalf("reason %q, want in-flight", r)
	}
	clk.t = clk.t.Add(11 * time.Second)
	if r := a.Admit(trading.KindPlaceOrder); r != "" {
		t.Fatalf("an outcome never seen for 11 s (forget 10 s): shed for %q", r)
	}
	if got := a.State().InFlight; got != 0 {
		t.Fatalf("%d in flight, want 0", got)
	}
}

func TestAdmissionShedState(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	var counted []string
	a := gateway.NewAdmission(gateway.AdmissionConfig{OnShed: func(kind, reason string) { counted = append(counted, kind+"/"+reason) }},
		clk.now)
	if s := a.State(); s.Shedding || !s.LastShed.IsZero() {
		t.Fatalf("fresh state %+v", s)
	}
	var rej *events.Rejection
	if err := a.Shed(trading.KindPlaceOrder, "lagging"); !errors.As(err, &rej) || rej.Code != events.CodeOverloaded {
		t.Fatalf("Shed returned %v, want the -1008 refusal", err)
	}
	if len(counted) != 1 || counted[0] != string(trading.KindPlaceOrder)+"/lagging" {
		t.Fatalf("counted %v", counted)
	}
	if s := a.State(); !s.Shedding || s.Reason != "lagging" || !s.LastShed.Equal(clk.t) {
		t.Fatalf("state after a shed: %+v", s)
	}
	clk.t = clk.t.Add(6 * time.Second)
	if s := a.State(); s.Shedding || s.Reason != "" {
		t.Fatalf("state 6 s after the last shed: %+v", s)
	}
}
