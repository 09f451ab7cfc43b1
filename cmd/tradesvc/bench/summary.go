package bench

import (
	"math"
	"slices"
	"time"
)

// LoadResult is what one open-loop load offered and what came back.
type LoadResult struct {
	Name     string  `json:"name,omitempty"`
	RespType string  `json:"newOrderRespType"`
	Offered  float64 `json:"offeredPerSec"`
	Seconds  float64 `json:"seconds"`
	Keys     int     `json:"keys"`
	// Scheduled orders; Sent of them went out (the others' key was paused after a 429).
	Scheduled int `json:"scheduled"`
	Sent      int `json:"sent"`
	// Answers counts every outcome ("200 ACCEPTED", "503 -1008", "transport error"...);
	// Samples holds one message of each outcome that is not a 200.
	Answers map[string]int    `json:"answers"`
	Samples map[string]string `json:"samples,omitempty"`
	// Acknowledged orders (a 200 with a status) and their rate over the offered time, or
	// over the time to the last acknowledgement when that is longer.
	Acknowledged   int     `json:"acknowledged"`
	AcceptedPerSec float64 `json:"acceptedPerSec"`
	// Latency of every answer, from when it was sent (its wait for a connection of the
	// client's pool included), and by outcome. The send is not held back by earlier answers
	// (open loop); how late it started after it was due is Client.ScheduleLag.
	Latency   Summary            `json:"latency"`
	ByOutcome map[string]Summary `json:"latencyByOutcome"`
	// P50OverFloor is Latency.P50 over the floor measured in the same run.
	P50OverFloor float64      `json:"p50OverFloor,omitempty"`
	Fill         *FillResult  `json:"fill,omitempty"`
	Client       ClientResult `json:"client"`
}

// FillResult is acceptance (the acknowledgement's arrival) to FILLED (the arrival of the
// order's DEAL on the key's user data stream), over the acknowledged orders.
type FillResult struct {
	Seen    int `json:"seen"`
	Missing int `json:"missing"`
	// Untimed orders were placed by keys whose stream was not read (--stream-keys).
	Untimed int     `json:"untimed,omitempty"`
	Latency Summary `json:"latency"`
	// P99WithMissingMs counts a missing DEAL as infinitely late: -1 when more than 1 % are
	// missing (the p99 is then unknown and unbounded).
	P99WithMissingMs float64 `json:"p99WithMissingMs"`
	// WithoutC DEALs came without the order's client order id `C` (the spec wants it on every
	// DEAL of an order placed through the API, for the key that placed it); they are timed by
	// their order id, read afterwards through GET /v1/order.
	WithoutC int `json:"withoutC"`
	// MissingOrders names the first missing ones.
	MissingOrders []string `json:"missingOrders,omitempty"`
	// BeforeAnswer DEALs arrived before their acknowledgement did (counted as 0).
	BeforeAnswer int   `json:"beforeAnswer"`
	StreamGaps   int64 `json:"streamGaps"`
}

// ClientResult says whether the load generator kept up: how late each sender started after
// its order was due, and how long it waited for a connection of its pool.
type ClientResult struct {
	ScheduleLag Summary `json:"scheduleLag"`
	ConnWait    Summary `json:"connWait"`
}

// fillLookup says when an order's DEAL arrived, and whether its frame lacked `C`.
type fillLookup interface {
	arrival(coid string) (time.Time, bool)
	withoutC(coid string) bool
}

// summarize reduces a finished load. deals tells when an order's DEAL arrived; fills is
// false when no stream was read (RESULT: the answer itself says FILLED).
func summarize(l *load, deals fillLookup, fills bool) LoadResult {
	lr := LoadResult{RespType: l.respType, Offered: l.sched.Rate, Seconds: l.sched.Duration.Seconds(), Keys: len(l.agents),
		Scheduled: len(l.recs), Answers: map[string]int{}, ByOutcome: map[string]Summary{}}
	var all, lag, wait []time.Duration
	byOutcome := map[string][]time.Duration{}
	var lastAck time.Time
	var fill []time.Duration
	var f FillResult
	for _, o := range l.recs {
		out := o.Outcome()
		lr.Answers[out]++
		lag = append(lag, max(o.lag, 0))
		if !o.sent {
			continue
		}
		lr.Sent++
		all = append(all, o.latency)
		byOutcome[out] = append(byOutcome[out], o.latency)
		wait = append(wait, o.connWait)
		if o.httpStatus != 200 {
			if lr.Samples == nil {
				lr.Samples = map[string]string{}
			}
			if _, ok := lr.Samples[out]; !ok {
				lr.Samples[out] = firstOf(o.msg, o.transport)
			}
		}
		if !o.acknowledged() {
			continue
		}
		lr.Acknowledged++
		if o.answeredAt.After(lastAck) {
			lastAck = o.answeredAt
		}
		if !fills {
			continue
		}
		if !o.timed {
			f.Untimed++
			continue
		}
		at, ok := deals.arrival(o.coid)
		if !ok {
			f.Missing++
			if len(f.MissingOrders) < 20 {
				f.MissingOrders = append(f.MissingOrders, o.coid)
			}
			fill = append(fill, time.Duration(math.MaxInt64))
			continue
		}
		f.Seen++
		if deals.withoutC(o.coid) {
			f.WithoutC++
		}
		d := at.Sub(o.answeredAt)
		if d < 0 {
			f.BeforeAnswer++
			d = 0
		}
		fill = append(fill, d)
	}
	lr.Latency = Summarize(all)
	for k, v := range byOutcome {
		lr.ByOutcome[k] = Summarize(v)
	}
	lr.Client = ClientResult{ScheduleLag: Summarize(lag), ConnWait: Summarize(wait)}
	if lr.Acknowledged > 0 {
		span := max(l.sched.Duration, lastAck.Sub(l.start))
		lr.AcceptedPerSec = math.Round(float64(lr.Acknowledged)/span.Seconds()*10) / 10
	}
	if fills {
		f.P99WithMissingMs = fillP99(fill)
		seen := fill[:0:0]
		for _, d := range fill {
			if d != time.Duration(math.MaxInt64) {
				seen = append(seen, d)
			}
		}
		f.Latency = Summarize(seen)
		lr.Fill = &f
	}
	return lr
}

// fillP99 is the p99 of fill times where a missing DEAL is infinitely late: -1 when it falls
// on a missing one.
func fillP99(fill []time.Duration) float64 {
	if len(fill) == 0 {
		return 0
	}
	sorted := slices.Clone(fill)
	slices.Sort(sorted)
	p := Percentile(sorted, 99)
	if p == time.Duration(math.MaxInt64) {
		return -1
	}
	return ms(p)
}

func firstOf(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			if len(s) > 200 {
				return s[:200]
			}
			return s
		}
	}
	return ""
}
