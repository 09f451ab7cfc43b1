package bench

import (
	"context"
	"fmt"
	"time"
	"tradesvc/infra/wait"
)

// phase runs one open-loop load at rate for d with respType, waits for the DEALs still
// missing, and returns its records and result.
func (r *runner) phase(ctx context.Context, name string, rate float64, d time.Duration, respType string) (*load, LoadResult, error) {
	agents, err := r.keysFor(ctx, rate)
	if err != nil {
		return nil, LoadResult{}, err
	}
	if err := r.waitForFreshWindows(ctx, agents, rate); err != nil {
		return nil, LoadResult{}, err
	}
	l := &load{sched: Schedule{Rate: rate, Duration: d}, respType: respType, agents: agents}
	r.logf("%s: %.0f orders/s for %s, newOrderRespType=%s, over %d keys", name, rate, d, respType, len(agents))
	gaps := r.streams.gaps.Load()
	r.run(ctx, l)
	if err := ctx.Err(); err != nil {
		return nil, LoadResult{}, err
	}
	fills := r.o.Streams && respType == "ACK"
	if fills {
		r.awaitDeals(ctx, name, l.recs)
	}
	lr := summarize(l, r.deals, fills)
	lr.Name = name
	if lr.Fill != nil {
		lr.Fill.StreamGaps = r.streams.gaps.Load() - gaps
	}
	r.logf("%s: %d of %d acknowledged (%.1f/s), answer p50 %.1f ms p99 %.1f ms", name, lr.Acknowledged, lr.Scheduled,
		lr.AcceptedPerSec, lr.Latency.P50, lr.Latency.P99)
	return l, lr, nil
}

// awaitDeals waits for the DEALs of the acknowledged orders of recs: until they have all
// come, or none has for a while. Orders whose DEAL has not come with their C by then are
// looked up by order id (their frame may have come without it), and the wait goes on for
// the rest, up to --settle in all.
func (r *runner) awaitDeals(ctx context.Context, name string, recs []*orderRec) {
	var acked []*orderRec
	for _, o := range recs {
		if o.acknowledged() && o.timed {
			acked = append(acked, o)
		}
	}
	began := time.Now()
	missing := r.settle(ctx, acked, 3*time.Second, r.o.Settle)
	adopted := 0
	for round := 0; len(missing) > 0 && round < 2 && ctx.Err() == nil; round++ {
		adopted += r.resolveMissing(ctx, missing)
		missing = r.deals.missing(missing)
		if len(missing) > 0 && round == 0 {
			missing = r.settle(ctx, missing, min(15*time.Second, r.o.Settle), r.o.Settle-time.Since(began))
		}
	}
	if adopted > 0 || len(missing) > 0 {
		r.logf("%s: %d DEALs came without their C (timed by order id); %d acknowledged orders have no DEAL", name,
			adopted, len(missing))
	}
}

// split returns the acknowledged orders and those in doubt of recs.
func split(recs []*orderRec) (acked, inDoubt []*orderRec) {
	for _, o := range recs {
		switch {
		case o.acknowledged():
			acked = append(acked, o)
		case o.inDoubt():
			inDoubt = append(inDoubt, o)
		}
	}
	return acked, inDoubt
}

// fixedRate is `result` and `ack`: one load at --rate for --duration.
func (r *runner) fixedRate(ctx context.Context, rep *Report) (acked, inDoubt []*orderRec, err error) {
	respType := "ACK"
	if r.o.Scenario == ScenarioResult {
		respType = "RESULT"
	}
	l, lr, err := r.phase(ctx, r.o.Scenario, r.o.Rate, r.o.Duration, respType)
	if err != nil {
		return nil, nil, err
	}
	rep.Load = &lr
	acked, inDoubt = split(l.recs)
	return acked, inDoubt, nil
}

// findSustained runs the sustain search and records it in rep.
func (r *runner) findSustained(ctx context.Context, rep *Report) (float64, []*orderRec, error) {
	var recs []*orderRec
	n := 0
	sustained, steps, err := search(r.o, func(rate float64) (Step, error) {
		n++
		l, lr, err := r.phase(ctx, fmt.Sprintf("sustain step %d", n), rate, r.o.StepDuration, "ACK")
		if err != nil {
			return Step{}, err
		}
		recs = append(recs, l.recs...)
		st := judge(lr, r.o.Bound)
		verdict := "sustained"
		if !st.Pass {
			verdict = "not sustained: " + st.Reason
		}
		r.logf("sustain step %d: %.0f orders/s %s (acceptance-to-FILLED p50 %.0f ms, p99 %.0f ms)", n, rate, verdict,
			st.FillP50Ms, st.FillP99Ms)
		if err := wait.For(ctx, 2*time.Second); err != nil { // let the machine breathe between steps
			return Step{}, err
		}
		return st, nil
	})
	rep.Sustain = &SustainResult{BoundMs: ms(r.o.Bound), Sustained: sustained, Steps: steps}
	return sustained, recs, err
}

// sustainOnly is `sustain`: the search alone.
func (r *runner) sustainOnly(ctx context.Context, rep *Report) (acked, inDoubt []*orderRec, err error) {
	if !r.o.Streams {
		return nil, nil, fmt.Errorf("sustain times FILLED on the user data streams: --streams=false leaves nothing to judge")
	}
	_, recs, err := r.findSustained(ctx, rep)
	if err != nil {
		return nil, nil, err
	}
	acked, inDoubt = split(recs)
	return acked, inDoubt, nil
}

// overload is `overload`: --multiple times the sustained rate (--sustained, or found first
// by the sustain search in the same run) for --duration, with ACK.
func (r *runner) overload(ctx context.Context, rep *Report) (acked, inDoubt []*orderRec, err error) {
	sustained := r.o.Sustained
	var recs []*orderRec
	if sustained == 0 {
		if !r.o.Streams {
			return nil, nil, fmt.Errorf("finding the sustained rate needs the user data streams: pass --sustained or drop --streams=false")
		}
		if sustained, recs, err = r.findSustained(ctx, rep); err != nil {
			return nil, nil, err
		}
		if sustained == 0 {
			return nil, nil, fmt.Errorf("no rate from %.0f orders/s down was sustained: nothing to overload", r.o.From)
		}
	}
	rate := sustained * r.o.Multiple
	l, lr, err := r.phase(ctx, fmt.Sprintf("overload %.4g× %.0f/s", r.o.Multiple, sustained), rate, r.o.Duration, "ACK")
	if err != nil {
		return nil, nil, err
	}
	rep.Load = &lr
	acked, inDoubt = split(append(recs, l.recs...))
	return acked, inDoubt, nil
}
