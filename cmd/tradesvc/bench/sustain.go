package bench

import (
	"fmt"
	"math"
	"time"
)

// SustainResult is the search for the highest ACK rate the service sustains: the rate at
// which acceptance-to-FILLED p99 stays under Bound (the definition), found by short
// steps, each a fresh open-loop load after the previous one has drained.
type SustainResult struct {
	BoundMs   float64 `json:"boundMs"`
	Sustained float64 `json:"sustainedPerSec"`
	Steps     []Step  `json:"steps"`
}

// Step is one rate tried.
type Step struct {
	Rate           float64        `json:"rate"`
	Pass           bool           `json:"pass"`
	Reason         string         `json:"reason,omitempty"`
	AcceptedPerSec float64        `json:"acceptedPerSec"`
	AnswerP99Ms    float64        `json:"answerP99Ms"`
	FillP50Ms      float64        `json:"fillP50Ms"`
	FillP99Ms      float64        `json:"fillP99Ms"`
	Missing        int            `json:"missingDeals"`
	Answers        map[string]int `json:"answers"`
}

// judge decides whether a step's load was sustained: at least 99 % of the offered orders
// acknowledged, and acceptance-to-FILLED p99 under bound with a missing DEAL counted as
// infinitely late.
func judge(lr LoadResult, bound time.Duration) Step {
	st := Step{Rate: lr.Offered, AcceptedPerSec: lr.AcceptedPerSec, AnswerP99Ms: lr.Latency.P99, Answers: lr.Answers}
	if lr.Fill != nil {
		st.FillP50Ms, st.FillP99Ms, st.Missing = lr.Fill.Latency.P50, lr.Fill.P99WithMissingMs, lr.Fill.Missing
	}
	switch {
	case lr.Scheduled == 0:
		st.Reason = "nothing scheduled"
	case float64(lr.Acknowledged) < 0.99*float64(lr.Scheduled):
		st.Reason = fmt.Sprintf("%d of %d orders acknowledged (< 99 %%)", lr.Acknowledged, lr.Scheduled)
	case lr.Fill == nil:
		st.Reason = "no user data stream: FILLED not timed"
	case st.FillP99Ms < 0:
		st.Reason = fmt.Sprintf("%d DEALs missing (> 1 %%)", st.Missing)
	case st.FillP99Ms >= ms(bound):
		st.Reason = fmt.Sprintf("acceptance-to-FILLED p99 %.0f ms >= %.0f ms", st.FillP99Ms, ms(bound))
	default:
		st.Pass = true
	}
	return st
}

// search finds the highest rate that passes: from From it multiplies the rate by Factor
// while steps pass (up to Max), divides it while they fail (three times at most), then
// bisects between the last passing and the first failing rate Refine times. Rates are whole
// orders per second. It returns 0 when no rate passed.
func search(o Options, step func(rate float64) (Step, error)) (float64, []Step, error) {
	var steps []Step
	good, bad := 0.0, 0.0
	// try runs a step and moves the bound it decides: good when the rate passes, bad when not.
	try := func(rate float64) (bool, error) {
		st, err := step(rate)
		if err != nil {
			return false, err
		}
		steps = append(steps, st)
		if st.Pass {
			good = rate
		} else {
			bad = rate
		}
		return st.Pass, nil
	}
	for rate := math.Round(o.From); ; {
		pass, err := try(rate)
		if err != nil {
			return good, steps, err
		}
		if !pass {
			break
		}
		if rate >= o.Max {
			return good, steps, nil
		}
		rate = math.Min(o.Max, math.Max(rate+1, math.Round(rate*o.Factor)))
	}
	for tries := 0; good == 0 && tries < 3 && bad > 1; tries++ {
		if _, err := try(math.Max(1, math.Round(bad/o.Factor))); err != nil {
			return good, steps, err
		}
	}
	for i := 0; i < o.Refine && good > 0 && bad-good > math.Max(1, good*0.05); i++ {
		if _, err := try(math.Round((good + bad) / 2)); err != nil {
			return good, steps, err
		}
	}
	return good, steps, nil
}
