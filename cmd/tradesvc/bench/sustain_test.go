package bench

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// capacity fakes a service that sustains up to limit orders/s.
func capacity(limit float64, tried *[]float64) func(float64) (Step, error) {
	return func(rate float64) (Step, error) {
		*tried = append(*tried, rate)
		return Step{Rate: rate, Pass: rate <= limit}, nil
	}
}

func searchOpts(from, most, factor float64, refine int) Options {
	return Options{From: from, Max: most, Factor: factor, Refine: refine}
}

func TestSustainSearchRampsThenBisects(t *testing.T) {
	var tried []float64
	got, steps, err := search(searchOpts(100, 3000, 1.5, 2), capacity(400, &tried))
	// 100, 150, 225, 338 pass, 507 fails; then 423 fails, 381 (half way to 338) passes.
	want := []float64{100, 150, 225, 338, 507, 423, 381}
	if err != nil || got != 381 || !slices.Equal(tried, want) || len(steps) != len(want) {
		t.Fatalf("sustained %v, tried %v (want 381 after %v), err %v", got, tried, want, err)
	}
}

func TestSustainSearchStopsAtMax(t *testing.T) {
	var tried []float64
	got, _, _ := search(searchOpts(100, 200, 1.5, 2), capacity(10000, &tried))
	if got != 200 || !slices.Equal(tried, []float64{100, 150, 200}) {
		t.Fatalf("sustained %v after %v, want 200 after [100 150 200]", got, tried)
	}
}

func TestSustainSearchGoesDownWhenTheFirstRateFails(t *testing.T) {
	var tried []float64
	got, _, _ := search(searchOpts(100, 3000, 2, 1), capacity(30, &tried))
	// 100 fails, 50 fails, 25 passes; then 38 (between 25 and 50) fails.
	if got != 25 || !slices.Equal(tried, []float64{100, 50, 25, 38}) {
		t.Fatalf("sustained %v after %v", got, tried)
	}
	tried = nil
	if got, _, _ := search(searchOpts(100, 3000, 2, 2), capacity(0, &tried)); got != 0 || len(tried) != 4 {
		t.Fatalf("nothing sustained: %v after %v (want 0 after 4 tries)", got, tried)
	}
}

func TestSustainSearchReturnsAStepsError(t *testing.T) {
	boom := errors.New("boom")
	_, _, err := search(searchOpts(100, 3000, 2, 1), func(float64) (Step, error) { return Step{}, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
}

func TestJudgeDefinesSustained(t *testing.T) {
	ok := LoadResult{Offered: 100, Scheduled: 1000, Acknowledged: 1000, AcceptedPerSec: 100,
		Fill: &FillResult{Seen: 1000, P99WithMissingMs: 400, Latency: Summary{P50: 20}}}
	if st := judge(ok, time.Second); !st.Pass || st.Rate != 100 || st.FillP99Ms != 400 || st.FillP50Ms != 20 {
		t.Fatalf("a healthy step: %+v", st)
	}
	for name, c := range map[string]LoadResult{
		"too few acknowledged": {Offered: 100, Scheduled: 1000, Acknowledged: 989, Fill: ok.Fill},
		"slow fills":           {Offered: 100, Scheduled: 1000, Acknowledged: 1000, Fill: &FillResult{P99WithMissingMs: 1000}},
		"deals missing":        {Offered: 100, Scheduled: 1000, Acknowledged: 1000, Fill: &FillResult{P99WithMissingMs: -1, Missing: 20}},
		"not timed":            {Offered: 100, Scheduled: 1000, Acknowledged: 1000},
	} {
		if st := judge(c, time.Second); st.Pass || st.Reason == "" {
			t.Errorf("%s: %+v, want a failure with a reason", name, st)
		}
	}
}
