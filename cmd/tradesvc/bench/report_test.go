package bench

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func sampleReport() *Report {
	return &Report{Tool: "tradesvc bench", Scenario: ScenarioAck, RunID: "abc", BaseURL: "https://127.0.0.1:8443",
		StartedAt: 1795522655492, Settings: Settings{Symbol: "BTCUSD", Side: "BUY", Volume: "0.01", Conns: 512, KeyUsage: 0.8},
		Keys:  KeysReport{Keys: 125, Logins: []int64{1001, 1002}, OrdersPerSecPerKey: 8},
		Floor: &Floor{FloorParts: FloorParts{HTTPS: Summary{P50: 0.2}, Kafka2: Summary{P50: 2.5}, PGCommit: Summary{P50: 0.3}, TotalMs: 3}},
		Load: &LoadResult{RespType: "ACK", Offered: 1000, Seconds: 60, Keys: 125, Scheduled: 60000, Sent: 60000,
			Answers:      map[string]int{"200 ACCEPTED": 59990, "400 -1021": 10},
			Samples:      map[string]string{"400 -1021": "Timestamp for this request is outside of the recvWindow."},
			Acknowledged: 59990, AcceptedPerSec: 999.8, Latency: Summary{Count: 60000, P50: 6, P99: 40},
			ByOutcome: map[string]Summary{"200 ACCEPTED": {P50: 6}, "400 -1021": {P50: 5000}},
			Fill:      &FillResult{Seen: 59990, Latency: Summary{P50: 300}, P99WithMissingMs: 900, WithoutC: 3}},
		Verify: &VerifyResult{Checked: 59990, Filled: 59989, NotFilled: 1,
			Orders: []Unfilled{{ClientOrderID: "bn-abc-7", Login: 1001, APIKey: "k1", Last: "ACCEPTED"}}},
	}
}

func TestReportVerdictRatioAndJSON(t *testing.T) {
	rep := sampleReport()
	rep.settle()
	if rep.OK || len(rep.Problems) != 1 || !strings.Contains(rep.Problems[0], "1 acknowledged orders not FILLED") {
		t.Fatalf("a lost order fails the run: ok %v, problems %v", rep.OK, rep.Problems)
	}
	if rep.Load.P50OverFloor != 2 {
		t.Fatalf("p50/floor %v, want 6/3 = 2", rep.Load.P50OverFloor)
	}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Load.Answers["400 -1021"] != 10 || back.Floor.TotalMs != 3 || back.Verify.Orders[0].ClientOrderID != "bn-abc-7" ||
		back.Load.Fill.P99WithMissingMs != 900 || back.OK {
		t.Fatalf("JSON round trip lost something: %s", buf.String())
	}
	for _, key := range []string{`"floor"`, `"kafka2Hops"`, `"p50OverFloor"`, `"acceptedPerSec"`, `"latencyByOutcome"`, `"notFilled"`} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("JSON lacks %s", key)
		}
	}

	ok := sampleReport()
	ok.Verify = &VerifyResult{Checked: 59990, Filled: 59990}
	ok.settle()
	if !ok.OK || len(ok.Problems) != 0 {
		t.Fatalf("nothing lost: ok %v problems %v", ok.OK, ok.Problems)
	}
	unverified := sampleReport()
	unverified.Verify = nil
	unverified.settle()
	if !unverified.OK || len(unverified.Problems) != 1 {
		t.Fatalf("unverified: ok %v problems %v (a warning, not a failure)", unverified.OK, unverified.Problems)
	}
}

func TestReportTableNamesEveryFigure(t *testing.T) {
	rep := sampleReport()
	rep.Sustain = &SustainResult{BoundMs: 1000, Sustained: 400, Steps: []Step{{Rate: 400, Pass: true, FillP99Ms: 600},
		{Rate: 600, Reason: "acceptance-to-FILLED p99 1500 ms >= 1000 ms", FillP99Ms: 1500}, {Rate: 900, FillP99Ms: -1}}}
	rep.settle()
	var buf bytes.Buffer
	rep.WriteText(&buf)
	out := buf.String()
	for _, want := range []string{
		"tradesvc bench ack", "keys: 125 at hand (8.0 orders/s each at most) over logins 1001,1002",
		"HTTPS round trip 0.200 ms + 2 Kafka hops 2.500 ms + Postgres commit 0.300 ms = 3.000 ms",
		"200 ACCEPTED", "400 -1021", "outside of the recvWindow", "acknowledged 59990: 999.8/s",
		"answer p50 / floor: 2.00×", "59990 seen, 0 missing", "3 DEAL frames came without the order's C",
		"highest ACK rate with acceptance-to-FILLED p99 < 1000 ms: 400 orders/s", "unbounded",
		"59989 of 59990 acknowledged orders FILLED, 1 not FILLED", "NOT FILLED bn-abc-7 login 1001 key k1: ACCEPTED",
		"result: FAILED",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// The paced floor is printed beside the floor, and the answer's ratio stays over the floor.
func TestReportShowsThePacedFloorBesideTheFloor(t *testing.T) {
	rep := sampleReport()
	rep.Floor.Paced = &PacedFloor{GapMs: 5,
		FloorParts: FloorParts{HTTPS: Summary{P50: 0.3}, Kafka2: Summary{P50: 2.2}, PGCommit: Summary{P50: 0.5}, TotalMs: 4}}
	rep.settle()
	if rep.Load.P50OverFloor != 2 {
		t.Fatalf("p50/floor %v, want 6/3 = 2 (the paced floor is for reading only)", rep.Load.P50OverFloor)
	}
	var buf bytes.Buffer
	rep.WriteText(&buf)
	for _, want := range []string{"floor paced as the load (one sample every 5.0 ms", "0.300 + 2.200 + 0.500 = 4.000 ms",
		"answer p50 / floor: 2.00×", "answer p50 / paced floor: 1.50×"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestFloorGapIsTheLoadsIntervalWhenItLetsProcessesSleep(t *testing.T) {
	for _, c := range []struct {
		rate float64
		want time.Duration
	}{{200, 5 * time.Millisecond}, {20, 50 * time.Millisecond}, {10, 0}, {1000, time.Millisecond}, {4000, 0}, {0, 0}} {
		if got := floorGap(c.rate); got != c.want {
			t.Errorf("floorGap(%v) = %v, want %v", c.rate, got, c.want)
		}
	}
}
