package gateway_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
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

// admit is one request's admission as its handler, once returned, leaves it: Admit, then
// Release when admitted (what the handler queued counts through Queued).
func admit(a *gateway.Admission, k trading.Kind) string {
	r := a.Admit(k)
	if r == "" {
		a.Release(1)
	}
	return r
}

// A request admitted counts against the bound from Admit until its handler returns
// (Release), whatever it then queued: under overload hundreds are between the two at once,
// and a bound counting only what is queued would let them all in.
func TestAdmissionCountsAdmittedRequestsUntilReleased(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 3, RiskFactor: 2, MaxAge: time.Hour}, clk.now)
	a.Queued("queued")
	for i := range 2 {
		if r := a.Admit(trading.KindPlaceOrder); r != "" {
			t.Fatalf("admission %d of 3 (1 queued): shed for %q", i+1, r)
		}
	}
	if s := a.State(); s.InFlight != 1 || s.Admitting != 2 {
		t.Fatalf("state %+v, want 1 in flight and 2 admitting", s)
	}
	if r := a.Admit(trading.KindPlaceOrder); r != "in-flight" {
		t.Fatalf("1 queued and 2 admitting at a bound of 3: reason %q, want in-flight", r)
	}
	a.Release(1) // one handler returned without queueing (a validation error)
	if r := a.Admit(trading.KindPlaceOrder); r != "" {
		t.Fatalf("after a release: shed for %q", r)
	}
	a.Release(5) // never below zero
	if s := a.State(); s.Admitting != 0 {
		t.Fatalf("admitting %d after releasing more than admitted, want 0", s.Admitting)
	}
}

func TestAdmissionInFlightBound(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 2, RiskFactor: 2, MaxAge: time.Hour}, clk.now)
	if r := admit(a, trading.KindPlaceOrder); r != "" {
		t.Fatalf("empty: shed for %q", r)
	}
	a.Queued("a")
	a.Queued("b")
	if r := admit(a, trading.KindPlaceOrder); r != "in-flight" {
		t.Fatalf("2 in flight, bound 2: reason %q, want in-flight", r)
	}
	for _, k := range []trading.Kind{trading.KindCancelOrder, trading.KindClosePosition, trading.KindCloseAll} {
		if r := admit(a, k); r != "" {
			t.Errorf("%s with 2 in flight, risk bound 4: shed for %q", k, r)
		}
	}
	a.Queued("c")
	a.Queued("d")
	if r := admit(a, trading.KindCancelOrder); r != "in-flight" {
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
	if r := admit(a, trading.KindPlaceOrder); r != "in-flight" {
		t.Fatalf("2 in flight again: reason %q, want in-flight", r)
	}
	a.Observe(decided("c"))
	if r := admit(a, trading.KindPlaceOrder); r != "" {
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
	if r := admit(a, trading.KindPlaceOrder); r != "lagging" {
		t.Fatalf("2 operations older than 100ms: reason %q, want lagging", r)
	}
	// Risk-reducing: twice the age and twice the count.
	if r := admit(a, trading.KindClosePosition); r != "" {
		t.Fatalf("close: shed for %q", r)
	}
	clk.t = clk.t.Add(100 * time.Millisecond) // old ones 250ms, young 100ms
	if r := admit(a, trading.KindClosePosition); r != "" {
		t.Fatalf("close with 2 operations past 200ms (limit 4): shed for %q", r)
	}
	a.Observe(decided("old1"))
	if r := admit(a, trading.KindPlaceOrder); r != "" {
		t.Fatalf("one late operation left (limit 2): shed for %q", r)
	}
	// Re-queued (a retry that queued again) counts from its new time only.
	a.Queued("old2")
	if r := admit(a, trading.KindPlaceOrder); r != "" {
		t.Fatalf("re-queued operation is young: shed for %q", r)
	}
}

func TestAdmissionForgetsUnseenOutcomes(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 1, Forget: 10 * time.Second}, clk.now)
	a.Queued("lost")
	if r := admit(a, trading.KindPlaceOrder); r != "in-flight" {
		t.Fatalf("reason %q, want in-flight", r)
	}
	clk.t = clk.t.Add(11 * time.Second)
	if r := admit(a, trading.KindPlaceOrder); r != "" {
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

// Past a lag the in-flight bound is what the path took, not everything offered: while
// operations lag it falls to nine tenths of what is in flight (never below MinInFlight), and
// once the path keeps up it rises by a tenth per Adjust while it is nearly reached (never
// above MaxInFlight).
func TestAdmissionBoundAdaptsToTheLag(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 100, MinInFlight: 5, MaxAge: 100 * time.Millisecond,
		StaleLimit: 2, Adjust: 10 * time.Millisecond, RiskFactor: 2, Forget: time.Minute}, clk.now)
	if got := a.State().Bound; got != 100 {
		t.Fatalf("bound %d at start, want MaxInFlight 100", got)
	}
	ids := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return out
	}
	late := ids("late", 20)
	for _, id := range late {
		a.Queued(id)
	}
	clk.t = clk.t.Add(150 * time.Millisecond)
	if r := admit(a, trading.KindPlaceOrder); r != "lagging" {
		t.Fatalf("20 operations older than 100ms: reason %q, want lagging", r)
	}
	if s := a.State(); s.Bound != 18 || s.Lowered != "lagging" {
		t.Fatalf("bound %d, lowered %q after the lag was seen with 20 in flight, want 18, lagging", s.Bound, s.Lowered)
	}
	// The lag goes on: a tenth less every Adjust, down to MinInFlight.
	for range 30 {
		clk.t = clk.t.Add(10 * time.Millisecond)
		admit(a, trading.KindPlaceOrder)
	}
	if got := a.State().Bound; got != 5 {
		t.Fatalf("bound %d after a long lag, want MinInFlight 5", got)
	}
	// The late ones are decided: no lag, and 5 may be in flight, not 100.
	for _, id := range late {
		a.Observe(decided(id))
	}
	admitted := 0
	for _, id := range ids("next", 10) {
		if admit(a, trading.KindPlaceOrder) != "" {
			break
		}
		a.Queued(id)
		admitted++
	}
	if admitted != 5 {
		t.Fatalf("%d admitted right after the lag, want the bound's 5", admitted)
	}
	// A close is held to RiskFactor × MaxInFlight, not to the adaptive bound.
	for _, id := range ids("close", 150) {
		if r := admit(a, trading.KindClosePosition); r != "" {
			t.Fatalf("a close with %d in flight (risk bound 200): shed for %q", a.State().InFlight, r)
		}
		a.Queued(id)
	}
	for _, id := range ids("close", 150) {
		a.Observe(decided(id))
	}
	// The path keeps up and the bound is reached: it rises by a tenth (at least one) per Adjust.
	clk.t = clk.t.Add(10 * time.Millisecond)
	if r := admit(a, trading.KindPlaceOrder); r != "" {
		t.Fatalf("after an Adjust with the bound reached: shed for %q", r)
	}
	if got := a.State().Bound; got != 6 {
		t.Fatalf("bound %d, want 6", got)
	}
	// Not reached (under four fifths in flight): it stays.
	for _, id := range ids("next", 5) {
		a.Observe(decided(id))
	}
	clk.t = clk.t.Add(10 * time.Millisecond)
	admit(a, trading.KindPlaceOrder)
	if got := a.State().Bound; got != 6 {
		t.Fatalf("bound %d with nothing in flight, want it kept at 6", got)
	}
	// Reached again and again, every operation decided within 80ms: it grows back to
	// MaxInFlight and no further.
	batches := map[int][]string{}
	for step := range 100 {
		for j := range 12 {
			if admit(a, trading.KindPlaceOrder) == "" {
				id := fmt.Sprintf("s%d-%d", step, j)
				a.Queued(id)
				batches[step] = append(batches[step], id)
			}
		}
		clk.t = clk.t.Add(10 * time.Millisecond)
		for _, id := range batches[step-8] {
			a.Observe(decided(id))
		}
	}
	if got := a.State().Bound; got != 100 {
		t.Fatalf("bound %d after the path kept up, want MaxInFlight 100", got)
	}
}

// Two Adjust windows in a row whose scheduling latency is past MaxSchedDelay lower the bound
// to nine tenths of twice what is in flight (a lag: of what is in flight); one such window
// lowers nothing, and flattening keeps its static bound.
func TestAdmissionBoundFallsWhileTheProcessIsSaturated(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	delay := time.Millisecond
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 100, MinInFlight: 5, MaxAge: time.Hour,
		StaleLimit: 1000, Adjust: 10 * time.Millisecond, RiskFactor: 2, Forget: time.Hour,
		MaxSchedDelay: 30 * time.Millisecond, SchedDelay: func() time.Duration { return delay }}, clk.now)
	for i := range 50 {
		a.Queued(fmt.Sprintf("op%d", i))
	}
	step := func() string {
		clk.t = clk.t.Add(10 * time.Millisecond)
		return admit(a, trading.KindPlaceOrder)
	}
	if r := step(); r != "" || a.State().Bound != 100 {
		t.Fatalf("quick scheduling: reason %q, bound %d; want admitted, bound 100", r, a.State().Bound)
	}
	delay = 40 * time.Millisecond
	if r := step(); r != "" || a.State().Bound != 100 {
		t.Fatalf("one slow window: reason %q, bound %d; want admitted, bound still 100", r, a.State().Bound)
	}
	if got := a.State().SchedDelayP99Ms; got != 40 {
		t.Fatalf("state shows a scheduling latency of %v ms; want 40", got)
	}
	step()
	if s := a.State(); s.Bound != 90 || s.Lowered != "cpu" {
		t.Fatalf("bound %d, lowered %q after two slow windows with 50 in flight; want 90, cpu", s.Bound, s.Lowered)
	}
	step()
	if got := a.State().Bound; got != 81 {
		t.Fatalf("bound %d after three slow windows with 50 in flight; want 81", got)
	}
	for i := 50; i < 81; i++ {
		a.Queued(fmt.Sprintf("op%d", i))
	}
	if r := admit(a, trading.KindPlaceOrder); r != "in-flight" {
		t.Fatalf("81 in flight at a bound of 81: reason %q, want in-flight", r)
	}
	if r := admit(a, trading.KindCancelOrder); r != "" {
		t.Fatalf("a cancel while saturated: shed for %q; flattening keeps its static bound", r)
	}
	delay = time.Millisecond
	step()
	if got := a.State().Bound; got != 89 {
		t.Fatalf("bound %d once scheduling is quick again with 81 in flight; want 89 (nearly reached: up by a tenth)", got)
	}
}

// The lag bound's count is kept as operations are queued, queued again, decided and
// forgotten, instead of read from the queue on every request; over a long random sequence
// its verdict is the one a plain count gives: at least StaleLimit operations in flight for
// longer than MaxAge (RiskFactor times both for risk-reducing operations), those waiting
// longer than Forget no longer counted.
func TestAdmissionLagCountMatchesAPlainCount(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	const maxAge, forget, limit, factor = 100 * time.Millisecond, time.Second, 3, 2
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 1_000_000, MinInFlight: 1_000_000, MaxAge: maxAge,
		StaleLimit: limit, RiskFactor: factor, Forget: forget}, clk.now)
	model := map[string]time.Time{} // in flight: when queued
	rng := rand.New(rand.NewPCG(1, 2))
	lagging := func(age time.Duration, limit int) bool {
		n := 0
		for id, at := range model {
			switch d := clk.t.Sub(at); {
			case d > forget:
				delete(model, id)
			case d > age:
				n++
			}
		}
		return n >= limit
	}
	verdicts := map[bool]int{}
	for step := range 20_000 {
		clk.t = clk.t.Add(time.Duration(rng.IntN(30)) * time.Millisecond)
		id := fmt.Sprintf("op-%d", rng.IntN(12))
		switch rng.IntN(4) {
		case 0:
			a.Queued(id)
			model[id] = clk.t
		case 1:
			a.Observe(decided(id))
			delete(model, id)
		default:
			kind, age, n := trading.KindPlaceOrder, maxAge, limit
			if rng.IntN(2) == 0 {
				kind, age, n = trading.KindClosePosition, factor*maxAge, factor*limit
			}
			want := lagging(age, n)
			if got := admit(a, kind) == "lagging"; got != want {
				t.Fatalf("step %d, %s: lagging %v, a plain count says %v", step, kind, got, want)
			}
			verdicts[want]++
		}
	}
	if verdicts[true] < 100 || verdicts[false] < 100 {
		t.Fatalf("the sequence hardly tried both verdicts: %v", verdicts)
	}
}

// path drives an Admission as a steady order flow would: every Adjust (10 ms) it offers rate
// operations, queues those admitted (a shed one is counted, as the gateway's handler does),
// each decided wait after it was queued (waitOf), and runs one admission that queues nothing
// (which adapts the bound).
type path struct {
	t       *testing.T
	a       *gateway.Admission
	clk     *fakeClock
	pending map[string]time.Time // queued, to be decided at (run)
	fifo    []queuedOp           // queued, in order (serve)
	n       int
	shed    int            // operations offered and shed
	lowered map[string]int // OnLower's counts by cause
}

// queuedOp is an operation serve queued, and when.
type queuedOp struct {
	id string
	at time.Time
}

func newPath(t *testing.T, cfg gateway.AdmissionConfig) *path {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	cfg.Adjust, cfg.MaxAge, cfg.StaleLimit, cfg.Forget = 10*time.Millisecond, time.Hour, 1_000_000, time.Hour
	p := &path{t: t, clk: clk, pending: map[string]time.Time{}, lowered: map[string]int{}}
	cfg.OnLower = func(cause string) { p.lowered[cause]++ }
	p.a = gateway.NewAdmission(cfg, clk.now)
	return p
}

// offer offers one operation: queued (its id returned) unless the admission sheds it.
func (p *path) offer() (id string, queued bool) {
	if r := p.a.Admit(trading.KindPlaceOrder); r != "" {
		_ = p.a.Shed(trading.KindPlaceOrder, r)
		p.shed++
		return "", false
	}
	id = fmt.Sprintf("op%d", p.n)
	p.n++
	p.a.Queued(id)
	p.a.Release(1)
	return id, true
}

// probe runs one admission that queues nothing, at the end of a window: it adapts the bound.
func (p *path) probe() {
	if p.a.Admit(trading.KindPlaceOrder) == "" {
		p.a.Release(1)
	}
}

// window is one Adjust window: offered operations offered (queue notes each one queued),
// the clock 10 ms on, decide, then the probe.
func (p *path) window(offered int, queue func(id string), decide func()) {
	for range offered {
		if id, ok := p.offer(); ok {
			queue(id)
		}
	}
	p.clk.t = p.clk.t.Add(10 * time.Millisecond)
	decide()
	p.probe()
}

// run goes on for steps windows, offering rate operations per window that wait waitOf(i) (i
// counts the operations queued) before they are decided.
func (p *path) run(steps, rate int, waitOf func(i int) time.Duration) {
	for range steps {
		p.window(rate, func(id string) { p.pending[id] = p.clk.t.Add(waitOf(p.n - 1)) }, func() {
			for id, at := range p.pending {
				if !at.After(p.clk.t) {
					p.a.Observe(decided(id))
					delete(p.pending, id)
				}
			}
		})
	}
}

// serve goes on for steps windows, offering offered operations per window to a path that
// decides at most capacity of them a window, first in first out, each at least base after it
// was queued: a path with a throughput, where a queue builds when more is let in than it
// takes.
func (p *path) serve(steps, offered, capacity int, base time.Duration) {
	for range steps {
		p.window(offered, func(id string) { p.fifo = append(p.fifo, queuedOp{id: id, at: p.clk.t}) }, func() {
			for n := capacity; n > 0 && len(p.fifo) > 0 && !p.fifo[0].at.Add(base).After(p.clk.t); n-- {
				p.a.Observe(decided(p.fifo[0].id))
				p.fifo = p.fifo[1:]
			}
		})
	}
}

func fixedWait(d time.Duration) func(int) time.Duration { return func(int) time.Duration { return d } }

// A standing queue lowers the in-flight bound: once even the fastest operation decided in a
// window waited more than QueueTarget beyond the path's base (the lowest such floor seen),
// two windows in a row, the bound falls to nine tenths of twice what is in flight, a window
// at a time, as while the process is saturated. Stalls, bursts that make some operations
// wait, a path slow by nature, and a queue of fewer than MinInFlight operations lower
// nothing.
func TestAdmissionBoundFallsOnAStandingQueue(t *testing.T) {
	cfg := gateway.AdmissionConfig{MaxInFlight: 1000, MinInFlight: 20, QueueTarget: 50 * time.Millisecond}

	t.Run("standing queue", func(t *testing.T) {
		p := newPath(t, cfg)
		p.run(50, 10, fixedWait(20*time.Millisecond)) // the base: 20 ms
		if s := p.a.State(); s.Bound != 1000 || s.WaitBaseMs != 20 || s.WaitFloorMs != 20 {
			t.Fatalf("a path that keeps up: %+v; want bound 1000, base and floor 20 ms", s)
		}
		// Every operation now waits 100 ms. The first window still sees the last 20 ms ones
		// decided; the next eight decide nothing, which judges nothing.
		wait := fixedWait(100 * time.Millisecond)
		p.run(9, 10, wait)
		if s := p.a.State(); s.Bound != 1000 || s.WaitFloorMs != 0 {
			t.Fatalf("windows that decided nothing: %+v; want bound 1000, floor 0", s)
		}
		p.run(1, 10, wait) // the first 100 ms ones decided: 100 > 20 + 50
		if s := p.a.State(); s.Bound != 1000 || s.WaitFloorMs != 100 {
			t.Fatalf("one window past the target: %+v; want bound 1000 (two in a row lower it), floor 100 ms", s)
		}
		p.run(1, 10, wait)
		if s := p.a.State(); s.Lowered != "queue" || p.lowered["queue"] != 1 || len(p.lowered) != 1 {
			t.Fatalf("lowered %q, counted %v; want queue, once", s.Lowered, p.lowered)
		}
		if got := p.a.State().Bound; got != 162 {
			t.Fatalf("bound %d after two windows past the target with 90 in flight; want 162 (nine tenths of twice what is in flight)", got)
		}
		p.run(1, 10, wait)
		if got := p.a.State().Bound; got != 145 {
			t.Fatalf("bound %d while the queue stands with 90 in flight; want 145 (nine tenths of 162: over half of it is used)", got)
		}
		// The queue stands: the bound falls a tenth a window until it binds, and what is
		// offered past it is shed.
		p.run(30, 10, wait)
		if got := p.a.State().Bound; got >= 90 || p.shed == 0 {
			t.Fatalf("a standing queue of 30 windows: bound %d, %d shed; want it fallen below the 90 in flight, requests shed", got, p.shed)
		}
		// The queue drains (the 100 ms ones still in flight are decided in 10 windows): the
		// floor is back at the base, and nothing more is shed.
		p.run(10, 10, fixedWait(20*time.Millisecond))
		shed := p.shed
		p.run(20, 10, fixedWait(20*time.Millisecond))
		if s := p.a.State(); s.WaitFloorMs != 20 || p.shed != shed {
			t.Fatalf("the queue drained: %+v, %d more shed; want floor 20 ms, nothing more shed", s, p.shed-shed)
		}
	})

	// Three times what the path takes: the queue grows, the bound falls while it stands, and
	// what the path cannot take is shed at once instead of waiting in it.
	t.Run("overload", func(t *testing.T) {
		p := newPath(t, cfg)
		const capacity = 10
		p.serve(50, 10, capacity, 20*time.Millisecond)
		if s := p.a.State(); s.Bound != 1000 || s.WaitFloorMs != 20 || p.shed != 0 {
			t.Fatalf("offered what the path takes: %+v, %d shed; want bound 1000, floor 20 ms, nothing shed", s, p.shed)
		}
		p.serve(200, 30, capacity, 20*time.Millisecond)
		if p.lowered["queue"] == 0 {
			t.Fatalf("lowered %v under three times the path's throughput; want queue", p.lowered)
		}
		queued, shed, worst := p.n, p.shed, 0.0
		for range 100 {
			p.serve(1, 30, capacity, 20*time.Millisecond)
			worst = max(worst, p.a.State().WaitFloorMs)
		}
		if queued = p.n - queued; queued < 950 || queued > 1050 {
			t.Fatalf("queued %d of 3,000 offered in 100 windows; want about the 1,000 the path takes", queued)
		}
		if shed = p.shed - shed; shed+queued != 3000 {
			t.Fatalf("shed %d and queued %d of 3,000 offered", shed, queued)
		}
		if limit := 20 + 2*50.0; worst > limit {
			t.Fatalf("wait floor up to %v ms while shedding; want at most %v (the base and twice the target)", worst, limit)
		}
	})

	t.Run("stall", func(t *testing.T) {
		p := newPath(t, cfg)
		p.run(50, 10, fixedWait(20*time.Millisecond))
		// Nothing is decided for 500 ms, then everything held is: the last ones held waited
		// 10 ms. A stall is the lag bound's to judge.
		first := p.n
		p.run(50, 10, func(i int) time.Duration { return time.Duration(50-(i-first)/10) * 10 * time.Millisecond })
		if s := p.a.State(); s.Bound != 1000 || s.WaitFloorMs != 10 || s.Lowered != "" {
			t.Fatalf("after a stall of 500 ms: %+v; want bound 1000, floor 10 ms", s)
		}
	})

	t.Run("bursts", func(t *testing.T) {
		p := newPath(t, cfg)
		// One operation in four waits 300 ms (a stall that some meet), the rest 20 ms: the
		// fastest of every window still takes the base.
		p.run(300, 10, func(i int) time.Duration {
			if i%4 == 0 {
				return 300 * time.Millisecond
			}
			return 20 * time.Millisecond
		})
		if s := p.a.State(); s.Bound != 1000 || s.WaitFloorMs != 20 || s.Lowered != "" {
			t.Fatalf("bursts: %+v; want bound 1000, floor 20 ms", s)
		}
	})

	t.Run("slow path", func(t *testing.T) {
		p := newPath(t, cfg)
		p.run(300, 10, fixedWait(250*time.Millisecond)) // a trade server that takes 250 ms: its base
		if s := p.a.State(); s.Bound != 1000 || s.WaitBaseMs != 250 {
			t.Fatalf("a path slow by nature: %+v; want bound 1000, base 250 ms", s)
		}
	})

	t.Run("few in flight", func(t *testing.T) {
		p := newPath(t, cfg)
		p.run(50, 1, fixedWait(20*time.Millisecond))
		p.run(100, 1, fixedWait(150*time.Millisecond)) // 15 in flight, fewer than MinInFlight 20
		if s := p.a.State(); s.Bound != 1000 || s.WaitFloorMs != 150 {
			t.Fatalf("a standing queue of 15: %+v; want bound 1000, floor 150 ms", s)
		}
	})
}

// While the process is short of CPU, new exposure is let in at a bounded rate as well: nine
// tenths of what was let in, a tenth less every window it still is, never below 200 a second;
// a trickle of fewer than 200 a second is not bounded.
// Risk-reducing operations are never held to it. Once the process keeps up, the bound rises
// by a twentieth a window while four fifths of it are used, and it is lifted after 10 s
// without a saturated window. An operation shed for it is counted "rate".
func TestAdmissionRateBoundWhileTheProcessIsSaturated(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	delay := time.Millisecond
	a := gateway.NewAdmission(gateway.AdmissionConfig{MaxInFlight: 100_000, MinInFlight: 5, MaxAge: time.Hour,
		StaleLimit: 1_000_000, Adjust: 10 * time.Millisecond, Forget: time.Hour,
		MaxSchedDelay: 30 * time.Millisecond, SchedDelay: func() time.Duration { return delay }}, clk.now)
	// windowsOf offers per placements a window (100 a second each), evenly spread, and
	// returns how many were admitted; every one shed must have been shed for the rate.
	windowsOf := func(n, per int) (admitted int) {
		for range n * per {
			clk.t = clk.t.Add(10 * time.Millisecond / time.Duration(per))
			switch r := admit(a, trading.KindPlaceOrder); r {
			case "":
				admitted++
			case "rate":
			default:
				t.Fatalf("shed for %q; only the rate bound binds here", r)
			}
		}
		return admitted
	}
	windows := func(n int) int { return windowsOf(n, 20) } // 2,000 a second
	if got := windows(20); got != 400 || a.State().Rate != 0 {
		t.Fatalf("quick scheduling: %d of 400 admitted, rate bound %v; want all, none", got, a.State().Rate)
	}
	delay = 40 * time.Millisecond
	if got := windowsOf(50, 1); got != 50 || a.State().Rate != 0 {
		t.Fatalf("slow windows at 100 a second: %d of 50 admitted, rate bound %v; want all, none", got, a.State().Rate)
	}
	delay = time.Millisecond
	windows(1)
	delay = 40 * time.Millisecond
	if got := windows(1); got != 20 || a.State().Rate != 0 {
		t.Fatalf("one slow window: %d of 20 admitted, rate bound %v; want all, none", got, a.State().Rate)
	}
	windows(1)
	if got := a.State().Rate; got != 1800 {
		t.Fatalf("rate bound %v after two slow windows at 2,000 a second; want 1800", got)
	}
	if got := windows(1); got != 20 {
		t.Fatalf("%d of 20 admitted in the window after the bound was set; want all (it starts with a burst's worth)", got)
	}
	windows(99)
	if got := a.State().Rate; got != 200 {
		t.Fatalf("rate bound %v after 100 more slow windows; want the least, 200", got)
	}
	if got := windows(100); got < 190 || got > 210 {
		t.Fatalf("%d of 2,000 admitted in a second at the least rate bound; want about 200", got)
	}
	if r := admit(a, trading.KindClosePosition); r != "" {
		t.Fatalf("a close while saturated: shed for %q; flattening is never held to the rate bound", r)
	}
	delay = time.Millisecond
	first := windows(10)
	if got := a.State().Rate; got <= 200 || got >= 2000 {
		t.Fatalf("rate bound %v after 10 quick windows; want it risen from 200, still binding", got)
	}
	if later := windows(10); later <= first {
		t.Fatalf("%d admitted in the next 10 quick windows, %d in the first; want more as the bound rises", later, first)
	}
	windows(100)
	if got := windows(100); got != 2000 || a.State().Rate == 0 {
		t.Fatalf("%d of 2,000 admitted a second after the bound rose past what is offered, rate bound %v; "+
			"want all, the bound not lifted yet", got, a.State().Rate)
	}
	risen := a.State().Rate
	windows(100)
	if got := a.State().Rate; got != risen || got >= 2000*5/4*1.05 {
		t.Fatalf("rate bound %v, then %v while 2,000 a second are offered; want it risen no further than "+
			"where less than four fifths of it are used", risen, got)
	}
	windows(700)
	if got := a.State().Rate; got != 0 {
		t.Fatalf("rate bound %v 10 s after the last slow window; want it lifted", got)
	}
	delay = 40 * time.Millisecond
	windows(2)
	if got := a.State().Rate; got != 1800 {
		t.Fatalf("rate bound %v after it was lifted and two slow windows at 2,000 a second; want 1800", got)
	}
	// A window that spans an idle second is not read as a rate (20 in a second would take
	// the bound to the least): the bound falls by a tenth, as in any slow window.
	clk.t = clk.t.Add(time.Second)
	windows(1)
	if got := a.State().Rate; got != 1620 {
		t.Fatalf("rate bound %v after a slow window that spans an idle second; want 1620", got)
	}
}
