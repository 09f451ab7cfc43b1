package bench

import (
	"testing"
	"time"
)

// fakeDeals is a fillLookup over fixed arrivals.
type fakeDeals struct {
	at  map[string]time.Time
	noC map[string]bool
}

func (f fakeDeals) arrival(coid string) (time.Time, bool) { t, ok := f.at[coid]; return t, ok }
func (f fakeDeals) withoutC(coid string) bool             { return f.noC[coid] }

// answered is an order sent at due+lag that took latency and got status (or code).
func answered(coid string, due time.Time, latency time.Duration, httpStatus int, status string, code int) *orderRec {
	lag := time.Millisecond
	return &orderRec{coid: coid, due: due, sent: true, timed: true, lag: lag, latency: latency, answeredAt: due.Add(lag + latency),
		httpStatus: httpStatus, status: status, code: code}
}

func TestSummaryCountsEveryOutcomeAndTimesFillsFromTheAcknowledgement(t *testing.T) {
	start := time.UnixMilli(1_000_000)
	sched := Schedule{Rate: 10, Duration: time.Second}
	l := &load{sched: sched, respType: "ACK", agents: make([]*agent, 2), start: start}
	for i := range 10 {
		due := start.Add(sched.Offset(i))
		var o *orderRec
		switch {
		case i < 6:
			o = answered(coid(i), due, time.Duration(i+1)*time.Millisecond, 200, "ACCEPTED", 0)
		case i == 6:
			o = answered(coid(i), due, 50*time.Millisecond, 503, "", -1008)
			o.msg = "overloaded; did not execute"
		case i == 7:
			o = answered(coid(i), due, 5*time.Second, 400, "", -1021)
			o.msg = "Timestamp for this request is outside of the recvWindow."
		case i == 8:
			o = &orderRec{coid: coid(i), due: due, sent: true, transport: "connection reset", answeredAt: due.Add(time.Second),
				latency: time.Second}
		default:
			o = &orderRec{coid: coid(i), due: due} // its key was paused: not sent
		}
		l.recs = append(l.recs, o)
	}
	deals := fakeDeals{at: map[string]time.Time{}, noC: map[string]bool{coid(2): true}}
	for i := range 5 { // order 5's DEAL never came; order 0's came before its ACK
		deals.at[coid(i)] = l.recs[i].answeredAt.Add(time.Duration(10*(i+1)) * time.Millisecond)
	}
	deals.at[coid(0)] = l.recs[0].answeredAt.Add(-time.Millisecond)

	lr := summarize(l, deals, true)
	want := map[string]int{"200 ACCEPTED": 6, "503 -1008": 1, "400 -1021": 1, outcomeTransport: 1, outcomeNotSent: 1}
	if len(lr.Answers) != len(want) {
		t.Fatalf("answers %v, want %v", lr.Answers, want)
	}
	for k, n := range want {
		if lr.Answers[k] != n {
			t.Fatalf("answers %v, want %v", lr.Answers, want)
		}
	}
	if lr.Scheduled != 10 || lr.Sent != 9 || lr.Acknowledged != 6 || lr.Keys != 2 || lr.Offered != 10 {
		t.Fatalf("counts: %+v", lr)
	}
	if lr.Latency.Count != 9 || lr.ByOutcome["200 ACCEPTED"].Max != 6 || lr.ByOutcome["400 -1021"].P50 != 5000 {
		t.Fatalf("latencies: all %+v, by outcome %+v", lr.Latency, lr.ByOutcome)
	}
	if lr.Samples["503 -1008"] != "overloaded; did not execute" || lr.Samples[outcomeTransport] != "connection reset" {
		t.Fatalf("samples %v", lr.Samples)
	}
	// Six acknowledged within the offered second: 6/s.
	if lr.AcceptedPerSec != 6 {
		t.Fatalf("accepted/s %v, want 6", lr.AcceptedPerSec)
	}
	f := lr.Fill
	if f == nil || f.Seen != 5 || f.Missing != 1 || f.BeforeAnswer != 1 || f.WithoutC != 1 ||
		len(f.MissingOrders) != 1 || f.MissingOrders[0] != coid(5) {
		t.Fatalf("fill %+v", f)
	}
	// Seen: 0 (before the ACK), 20, 30, 40, 50 ms; the missing one makes p99 unbounded.
	if f.Latency.P50 != 30 || f.Latency.Max != 50 || f.P99WithMissingMs != -1 {
		t.Fatalf("fill latency %+v p99 %v", f.Latency, f.P99WithMissingMs)
	}
	if lr.Client.ScheduleLag.Max != 1 {
		t.Fatalf("schedule lag %+v", lr.Client.ScheduleLag)
	}
}

func TestAcceptedRateIsOverTheTimeToTheLastAcknowledgement(t *testing.T) {
	start := time.UnixMilli(2_000_000)
	l := &load{sched: Schedule{Rate: 4, Duration: time.Second}, respType: "RESULT", start: start}
	for i := range 4 {
		l.recs = append(l.recs, answered(coid(i), start.Add(l.sched.Offset(i)), 1900*time.Millisecond, 200, "FILLED", 0))
	}
	lr := summarize(l, fakeDeals{}, false)
	// The last answer came 0.75 + 0.001 + 1.9 s after the start: 4 / 2.651 s.
	if lr.AcceptedPerSec != 1.5 || lr.Fill != nil {
		t.Fatalf("accepted/s %v (want 1.5), fill %+v (want none for RESULT)", lr.AcceptedPerSec, lr.Fill)
	}
}

func TestOrdersOfKeysWithoutAStreamAreNotTimed(t *testing.T) {
	start := time.UnixMilli(3_000_000)
	l := &load{sched: Schedule{Rate: 2, Duration: time.Second}, respType: "ACK", start: start}
	timed := answered(coid(0), start, time.Millisecond, 200, "ACCEPTED", 0)
	untimed := answered(coid(1), start, time.Millisecond, 200, "ACCEPTED", 0)
	untimed.timed = false
	l.recs = []*orderRec{timed, untimed}
	lr := summarize(l, fakeDeals{at: map[string]time.Time{coid(0): timed.answeredAt.Add(5 * time.Millisecond)}}, true)
	if f := lr.Fill; f.Seen != 1 || f.Missing != 0 || f.Untimed != 1 || f.P99WithMissingMs != 5 {
		t.Fatalf("fill %+v: the untimed order is neither seen nor missing", f)
	}
}

func TestOutcomesAcknowledgementAndDoubt(t *testing.T) {
	for _, c := range []struct {
		o            orderRec
		outcome      string
		acked, doubt bool
	}{
		{orderRec{sent: true, httpStatus: 200, status: "FILLED"}, "200 FILLED", true, false},
		{orderRec{sent: true, httpStatus: 200, status: "ACCEPTED"}, "200 ACCEPTED", true, false},
		{orderRec{sent: true, httpStatus: 503, code: -1008}, "503 -1008", false, false},
		{orderRec{sent: true, httpStatus: 503, code: -5009}, "503 -5009", false, true},
		{orderRec{sent: true, httpStatus: 502}, "502", false, true},
		{orderRec{sent: true, httpStatus: 429, code: -1015}, "429 -1015", false, false},
		{orderRec{sent: true, transport: "EOF"}, outcomeTransport, false, true},
		{orderRec{}, outcomeNotSent, false, false},
	} {
		if got := c.o.Outcome(); got != c.outcome || c.o.acknowledged() != c.acked || c.o.inDoubt() != c.doubt {
			t.Errorf("%+v: outcome %q acked %v doubt %v; want %q %v %v", c.o, got, c.o.acknowledged(), c.o.inDoubt(),
				c.outcome, c.acked, c.doubt)
		}
	}
}

func coid(i int) string { return clientOrderID("test", i) }
