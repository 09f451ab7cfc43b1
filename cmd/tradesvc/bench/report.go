package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Report is the result of one run, printed as a table or as JSON (--json).
type Report struct {
	Tool       string         `json:"tool"`
	Scenario   string         `json:"scenario"`
	RunID      string         `json:"runId"`
	BaseURL    string         `json:"baseUrl"`
	StartedAt  int64          `json:"startedAt"`
	FinishedAt int64          `json:"finishedAt"`
	Settings   Settings       `json:"settings"`
	Keys       KeysReport     `json:"keys"`
	Floor      *Floor         `json:"floor,omitempty"`
	Load       *LoadResult    `json:"load,omitempty"`
	Sustain    *SustainResult `json:"sustain,omitempty"`
	Verify     *VerifyResult  `json:"verify,omitempty"`
	// OK is false when an acknowledged order was not FILLED (a lost order).
	OK       bool     `json:"ok"`
	Problems []string `json:"problems,omitempty"`
}

// Settings are the options that shape the figures.
type Settings struct {
	Symbol     string  `json:"symbol"`
	Side       string  `json:"side"`
	Volume     string  `json:"volume"`
	Conns      int     `json:"conns"`
	KeyUsage   float64 `json:"keyUsage"`
	RecvWindow int64   `json:"recvWindow,omitempty"`
	Streams    bool    `json:"streams"`
}

// KeysReport says over what the load was spread.
type KeysReport struct {
	Keys               int     `json:"keys"`
	Logins             []int64 `json:"logins"`
	Limits             Limits  `json:"limits"`
	OrdersPerSecPerKey float64 `json:"ordersPerSecPerKey"`
}

// settle computes the ratios and the verdict.
func (rep *Report) settle() {
	if rep.Floor != nil && rep.Floor.TotalMs > 0 && rep.Load != nil {
		rep.Load.P50OverFloor = math.Round(rep.Load.Latency.P50/rep.Floor.TotalMs*100) / 100
	}
	rep.OK = true
	if v := rep.Verify; v != nil && v.NotFilled > 0 {
		rep.OK = false
		rep.Problems = append(rep.Problems, fmt.Sprintf("%d acknowledged orders not FILLED (lost)", v.NotFilled))
	}
	if rep.Verify == nil {
		rep.Problems = append(rep.Problems, "not verified (--verify=false): lost orders would go unseen")
	}
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteText writes the report as a table for people.
func (rep *Report) WriteText(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("tradesvc bench %s  (run %s, %s, %s)", rep.Scenario, rep.RunID, rep.BaseURL,
		time.UnixMilli(rep.StartedAt).UTC().Format("2006-01-02 15:04:05 UTC"))
	p("orders: MARKET %s %s %s; keys: %d at hand (%.1f orders/s each at most) over logins %s; %d connections",
		rep.Settings.Side, rep.Settings.Volume, rep.Settings.Symbol, rep.Keys.Keys, rep.Keys.OrdersPerSecPerKey,
		joinLogins(rep.Keys.Logins), rep.Settings.Conns)
	if f := rep.Floor; f != nil {
		p("")
		p("floor (p50, same run): HTTPS round trip %.3f ms + 2 Kafka hops %.3f ms + Postgres commit %.3f ms = %.3f ms",
			f.HTTPS.P50, f.Kafka2.P50, f.PGCommit.P50, f.TotalMs)
		if pf := f.Paced; pf != nil {
			p("floor paced as the load (one sample every %.1f ms; shown beside the floor, not used for its ratio): %.3f + %.3f + %.3f = %.3f ms",
				pf.GapMs, pf.HTTPS.P50, pf.Kafka2.P50, pf.PGCommit.P50, pf.TotalMs)
		}
	}
	if s := rep.Sustain; s != nil {
		p("")
		p("sustain: highest ACK rate with acceptance-to-FILLED p99 < %.0f ms: %.0f orders/s", s.BoundMs, s.Sustained)
		p("  %8s  %-4s  %12s  %12s  %12s  %12s  %s", "rate/s", "", "accepted/s", "answer p99", "fill p50", "fill p99", "")
		for _, st := range s.Steps {
			verdict := "pass"
			if !st.Pass {
				verdict = "fail"
			}
			p("  %8.0f  %-4s  %12.1f  %9.1f ms  %9.1f ms  %s  %s", st.Rate, verdict, st.AcceptedPerSec, st.AnswerP99Ms,
				st.FillP50Ms, fillCell(st.FillP99Ms), st.Reason)
		}
	}
	if l := rep.Load; l != nil {
		rep.writeLoad(p, l)
	}
	if v := rep.Verify; v != nil {
		p("")
		p("verified through GET /v1/order in %.1f s: %d of %d acknowledged orders FILLED, %d not FILLED", v.Seconds,
			v.Filled, v.Checked, v.NotFilled)
		for _, o := range v.Orders {
			p("  NOT FILLED %s login %d key %s: %s", o.ClientOrderID, o.Login, o.APIKey, o.Last)
		}
		for _, k := range sortedKeys(v.InDoubt) {
			p("  in doubt (no acknowledgement), now %q: %d", k, v.InDoubt[k])
		}
	}
	p("")
	for _, pr := range rep.Problems {
		p("problem: %s", pr)
	}
	if rep.OK {
		p("result: OK")
	} else {
		p("result: FAILED")
	}
}

func (rep *Report) writeLoad(p func(string, ...any), l *LoadResult) {
	p("")
	p("%s: offered %.0f orders/s for %.0f s (newOrderRespType=%s) over %d keys: %d scheduled, %d sent",
		nameOr(l.Name, rep.Scenario), l.Offered, l.Seconds, l.RespType, l.Keys, l.Scheduled, l.Sent)
	p("  %-24s %8s %10s %10s %10s %10s", "answer", "count", "p50 ms", "p90 ms", "p99 ms", "max ms")
	for _, k := range sortedKeys(l.Answers) {
		s := l.ByOutcome[k]
		p("  %-24s %8d %10.2f %10.2f %10.2f %10.2f", k, l.Answers[k], s.P50, s.P90, s.P99, s.Max)
	}
	p("  %-24s %8d %10.2f %10.2f %10.2f %10.2f", "all answers", l.Latency.Count, l.Latency.P50, l.Latency.P90,
		l.Latency.P99, l.Latency.Max)
	for _, k := range sortedKeys(l.Samples) {
		p("  %s: %s", k, l.Samples[k])
	}
	p("  acknowledged %d: %.1f/s", l.Acknowledged, l.AcceptedPerSec)
	if l.P50OverFloor > 0 {
		p("  answer p50 / floor: %.2f×", l.P50OverFloor)
		if rep.Floor.Paced != nil && rep.Floor.Paced.TotalMs > 0 {
			p("  answer p50 / paced floor: %.2f× (for reading only)", l.Latency.P50/rep.Floor.Paced.TotalMs)
		}
	}
	if f := l.Fill; f != nil {
		p("  acceptance → FILLED (DEAL on the user stream): %d seen, %d missing; p50 %.2f ms, p90 %.2f ms, p99 %s, max %.2f ms",
			f.Seen, f.Missing, f.Latency.P50, f.Latency.P90, fillCell(f.P99WithMissingMs), f.Latency.Max)
		if f.Untimed > 0 {
			p("  %d orders not timed: their keys' streams were not read (--stream-keys)", f.Untimed)
		}
		if f.WithoutC > 0 {
			p("  %d DEAL frames came without the order's C (timed by order id; the spec wants C on each)", f.WithoutC)
		}
		if f.BeforeAnswer > 0 || f.StreamGaps > 0 {
			p("  %d DEALs arrived before their acknowledgement (counted as 0 ms); %d stream gaps", f.BeforeAnswer, f.StreamGaps)
		}
		if len(f.MissingOrders) > 0 {
			p("  no DEAL seen for: %s", strings.Join(f.MissingOrders, " "))
		}
	}
	p("  client: schedule lag p99 %.2f ms (max %.2f), connection wait p99 %.2f ms (max %.2f)",
		l.Client.ScheduleLag.P99, l.Client.ScheduleLag.Max, l.Client.ConnWait.P99, l.Client.ConnWait.Max)
}

func fillCell(p99 float64) string {
	if p99 < 0 {
		return "  unbounded"
	}
	return fmt.Sprintf("%9.1f ms", p99)
}

func nameOr(name, def string) string {
	if name != "" {
		return name
	}
	return def
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
