package health_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"tradesvc/infra/health"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/leakcheck"
	"tradesvc/infra/testenv"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// sink records what the monitor mirrors as metrics.
type sink struct {
	mu    sync.Mutex
	ready map[string]bool
	up    map[string]bool
}

func (s *sink) SetReady(role string, ready bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ready[role] = ready
}

func (s *sink) SetDependencyUp(name string, up bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.up[name] = up
}

func get(t *testing.T, h http.Handler, path string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, rec.Body.String())
	}
	return rec.Code
}

// /readyz is 503 before the first round and whenever a dependency or a role fails, with the
// reasons named; 200 when everything answers. /livez is 200 while rounds run, 503 once the
// loop stopped for longer than three intervals.
func TestMonitorReadyzAndLivez(t *testing.T) {
	clk := testenv.NewClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	sk := &sink{ready: map[string]bool{}, up: map[string]bool{}}
	m, err := health.New(health.Config{Interval: time.Second, Now: clk.Now, Sink: sk, Logger: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var dbErr error
	var quotesStale bool
	m.AddDependency("postgres", func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return dbErr
	})
	m.AddRole("gateway", func(time.Time) health.RoleReport {
		mu.Lock()
		defer mu.Unlock()
		if quotesStale {
			return health.RoleReport{Reasons: []string{"quotes are stale"}}
		}
		return health.RoleReport{Ready: true, Details: map[string]int{"quotes": 3}}
	})
	h := m.Handler()
	var r health.Report
	if code := get(t, h, "/readyz", &r); code != http.StatusServiceUnavailable || r.Ready {
		t.Fatalf("before the first round: %d %+v", code, r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	defer stop()
	waitRound := func(after time.Time) health.Report {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := m.Report()
			if !r.CheckedAt.Before(after) && len(r.Dependencies) > 0 {
				return r
			}
			if time.Now().After(deadline) {
				t.Fatal("no round of probes")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitRound(clk.Now())
	if code := get(t, h, "/readyz", &r); code != http.StatusOK || !r.Ready || !r.Dependencies["postgres"].OK || !r.Roles["gateway"].Ready {
		t.Fatalf("all up: %d %+v", code, r)
	}

	mu.Lock()
	dbErr, quotesStale = errors.New("connection refused"), true
	mu.Unlock()
	clk.Add(time.Second)
	waitRound(clk.Now())
	r = health.Report{}
	if code := get(t, h, "/readyz", &r); code != http.StatusServiceUnavailable || r.Ready {
		t.Fatalf("postgres down and quotes stale: %d %+v", code, r)
	}
	joined := strings.Join(r.Reasons, "; ")
	if !strings.Contains(joined, "postgres unreachable: connection refused") || !strings.Contains(joined, "gateway: quotes are stale") {
		t.Errorf("reasons %q do not name both failures", joined)
	}
	if r.Dependencies["postgres"].Error != "connection refused" {
		t.Errorf("postgres dependency %+v", r.Dependencies["postgres"])
	}
	sk.mu.Lock()
	if sk.up["postgres"] || sk.ready["gateway"] {
		t.Errorf("metrics sink: up %v ready %v, want postgres down and the gateway not ready", sk.up, sk.ready)
	}
	sk.mu.Unlock()

	var live struct {
		Live bool `json:"live"`
	}
	if code := get(t, h, "/livez", &live); code != http.StatusOK || !live.Live {
		t.Fatalf("/livez while rounds run: %d %+v", code, live)
	}
	stop()
	clk.Add(10 * time.Second) // the loop is stopped: no round for longer than three intervals
	if code := get(t, h, "/livez", &live); code != http.StatusServiceUnavailable || live.Live {
		t.Fatalf("/livez with the loop stopped: %d %+v", code, live)
	}
}

// A consumer's lag is the distance from what it applied to the partition's end; it is
// stuck once it is behind (or failing) with nothing applied for longer than the stall
// bound, and no longer once it applies again. Parked messages are counted.
func TestConsumersLagStuckAndParked(t *testing.T) {
	clk := testenv.NewClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	var parked []string
	c := health.NewConsumers(clk.Now, func(consumer, topic string) { parked = append(parked, consumer+" "+topic) })
	o := c.Observer("projection.trading")
	o.Claimed("t", 0, 10, 10)
	o.Claimed("t", 1, -2, 0) // a new group: "oldest", not known yet
	st := c.Status(clk.Now(), 30*time.Second)["projection.trading"]
	if st.Partitions != 2 || st.LagEvents != 0 || st.Stuck {
		t.Fatalf("caught up: %+v", st)
	}
	logged := clk.Now()
	o.Applied("t", 0, 5, 14, logged, 20) // applied up to 14; the end is 20
	clk.Add(10 * time.Second)
	st = c.Status(clk.Now(), 30*time.Second)["projection.trading"]
	if st.LagEvents != 5 || st.LagSeconds != 10 || st.Stuck {
		t.Fatalf("behind by 5 for 10 s: %+v", st)
	}
	c.SetHighWater("t", 0, 25) // the Kafka probe sees the topic grow
	o.Failed("t", 0, 1, errors.New("deadlock detected"))
	clk.Add(31 * time.Second)
	st = c.Status(clk.Now(), 30*time.Second)["projection.trading"]
	if st.LagEvents != 10 || !st.Failing || !st.Stuck || !strings.Contains(st.StuckBecause, "deadlock detected") {
		t.Fatalf("failing and behind for 31 s: %+v", st)
	}
	o.Applied("t", 0, 10, 24, clk.Now(), 25)
	st = c.Status(clk.Now(), 30*time.Second)["projection.trading"]
	if st.LagEvents != 0 || st.Failing || st.Stuck {
		t.Fatalf("after applying again: %+v", st)
	}
	o.Parked(batch.Parked{Origin: batch.Origin{Topic: "t", Partition: 0, Offset: 25}, Err: errors.New("poison")})
	st = c.Status(clk.Now(), 30*time.Second)["projection.trading"]
	if st.Parked != 1 || !strings.Contains(st.LastParked, "offset 25: poison") || len(parked) != 1 || parked[0] != "projection.trading t" {
		t.Fatalf("after parking: %+v, sink %v", st, parked)
	}
	o.Disconnected(errors.New("kafka: client has run out of available brokers"))
	clk.Add(31 * time.Second)
	if st = c.Status(clk.Now(), 30*time.Second)["projection.trading"]; !st.Stuck || st.Disconnected == "" {
		t.Fatalf("disconnected for 31 s: %+v", st)
	}
	o.Released("t", 0)
	o.Released("t", 1)
	if got := c.Partitions(); len(got) != 0 {
		t.Fatalf("partitions after release: %v", got)
	}
}

// A partition idle for long is not stuck the moment a message arrives: its stall counts from
// the first sight of the message, not from the last batch it applied an hour before.
func TestConsumersIdlePartitionIsNotStuckWhenAMessageArrives(t *testing.T) {
	clk := testenv.NewClock(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC))
	c := health.NewConsumers(clk.Now, nil)
	o := c.Observer("projection.clickhouse.deals")
	o.Claimed("t", 6, 10, 10)
	o.Applied("t", 6, 1, 10, clk.Now(), 11)
	clk.Add(time.Hour)         // idle for an hour
	c.SetHighWater("t", 6, 11) // the Kafka probe finds it caught up
	c.SetHighWater("t", 6, 23) // then, at its next reading, 12 new messages
	clk.Add(3 * time.Second)   // the projection batches for up to 3 s
	st := c.Status(clk.Now(), 30*time.Second)["projection.clickhouse.deals"]
	if st.LagEvents != 12 || st.Stuck || st.LagSeconds != 3 {
		t.Fatalf("12 messages seen 3 s ago after an hour idle: %+v, want behind by 12 for 3 s, not stuck", st)
	}
	clk.Add(28 * time.Second) // 31 s since they were first seen, none applied
	st = c.Status(clk.Now(), 30*time.Second)["projection.clickhouse.deals"]
	if !st.Stuck || !strings.Contains(st.StuckBecause, "12 messages behind on t/6 with nothing applied for 31s") {
		t.Fatalf("12 messages seen 31 s ago, none applied: %+v, want stuck for 31s", st)
	}
	o.Applied("t", 6, 12, 22, clk.Now(), 23)
	if st = c.Status(clk.Now(), 30*time.Second)["projection.clickhouse.deals"]; st.Stuck || st.LagEvents != 0 {
		t.Fatalf("after applying them: %+v", st)
	}
}

// A consumer is behind since the tracker first knew of a message it has not applied: the end
// seen beyond what it applied dates the oldest such message, and applying past it moves the
// date to the next end seen, or clears it. Being idle for long is not lagging.
func TestConsumersLagDatesTheOldestMessageNotApplied(t *testing.T) {
	clk := testenv.NewClock(time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC))
	c := health.NewConsumers(clk.Now, nil)
	o := c.Observer("projection.trading")
	since := func() time.Time {
		t.Helper()
		lags := c.Lag("projection.trading")
		if len(lags) != 1 || lags[0].Topic != "t" || lags[0].Partition != 3 {
			t.Fatalf("lags %+v, want partition t/3 alone", lags)
		}
		return lags[0].BehindSince
	}
	o.Claimed("t", 3, 10, 10)
	clk.Add(time.Hour) // idle for an hour
	if s := since(); !s.IsZero() {
		t.Fatalf("caught up and idle: behind since %v", s)
	}
	first := clk.Now()
	c.SetHighWater("t", 3, 12) // the probe sees two new messages
	clk.Add(time.Second)
	c.SetHighWater("t", 3, 15) // and three more a second later
	clk.Add(5 * time.Second)
	if s := since(); !s.Equal(first) {
		t.Fatalf("behind since %v, want %v (when the oldest message not applied was first seen)", s, first)
	}
	o.Applied("t", 3, 2, 11, clk.Now(), 15) // applies the first two: the others were seen a second later
	if s := since(); !s.Equal(first.Add(time.Second)) {
		t.Fatalf("after applying the first two: behind since %v, want %v", s, first.Add(time.Second))
	}
	o.Applied("t", 3, 3, 14, clk.Now(), 15)
	if s := since(); !s.IsZero() {
		t.Fatalf("caught up again: behind since %v", s)
	}
	// The batch's own view of the end counts: a consumer applying old messages is behind
	// since it first saw there were more.
	seen := clk.Now()
	o.Applied("t", 3, 1, 15, clk.Now(), 40)
	clk.Add(3 * time.Second)
	for i := 0; i < 3*16; i++ { // more ends than marks kept: the oldest stays
		c.SetHighWater("t", 3, int64(41+i))
		clk.Add(10 * time.Millisecond)
	}
	if s := since(); !s.Equal(seen) {
		t.Fatalf("behind since %v, want %v", s, seen)
	}
	o.Released("t", 3)
	if lags := c.Lag("projection.trading"); len(lags) != 0 {
		t.Fatalf("released, still %+v", lags)
	}
}
