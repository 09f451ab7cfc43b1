package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/infra/mt5/sim"
	"tradesvc/infra/testenv"
)

// readyzReport is the part of GET /readyz the tests read.
type readyzReport struct {
	Ready   bool     `json:"ready"`
	Reasons []string `json:"reasons"`
	Roles   map[string]struct {
		Ready   bool            `json:"ready"`
		Reasons []string        `json:"reasons"`
		Details json.RawMessage `json:"details"`
	} `json:"roles"`
	Dependencies map[string]struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	} `json:"dependencies"`
}

func getJSON(t *testing.T, u string, v any) int {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q", u, ct)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v in %s", u, err, b)
	}
	return res.StatusCode
}

func metricsAddr(t *testing.T, a *app.App) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr, err := a.MetricsAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// waitReady polls /readyz until its readiness is want (and cond holds), returning the report.
func waitReady(t *testing.T, base string, want bool, what string, cond func(readyzReport) bool) readyzReport {
	t.Helper()
	var r readyzReport
	apptest.Eventually(t, 90*time.Second, what, func() bool {
		r = readyzReport{}
		status := getJSON(t, base+"/readyz", &r)
		if (status == http.StatusOK) != r.Ready {
			t.Fatalf("/readyz answered %d with ready=%v", status, r.Ready)
		}
		return r.Ready == want && (cond == nil || cond(r))
	})
	return r
}

func fastHealth(vars map[string]string) map[string]string {
	vars["TRADESVC_HEALTH_INTERVAL"] = "300ms"
	return vars
}

// A whole service answers /livez, and /readyz becomes 200 with every role and every
// dependency of the process, the projections' lag, the executor's heartbeat and the age of
// the newest quote of each symbol; the metrics carry the same facts.
func TestReadyzReportsEveryRoleAndDependency(t *testing.T) {
	p := apptest.Launch(t, fastHealth(apptest.Vars(t)))
	base := metricsAddr(t, p.App)
	var live struct {
		Live bool `json:"live"`
	}
	if status := getJSON(t, base+"/livez", &live); status != http.StatusOK || !live.Live {
		t.Fatalf("/livez = %d %+v", status, live)
	}
	r := waitReady(t, base, true, "the service ready", nil)
	for _, role := range []string{"gateway", "executor", "relay", "projector"} {
		if !r.Roles[role].Ready {
			t.Errorf("role %s missing or not ready: %+v", role, r.Roles[role])
		}
	}
	for _, dep := range []string{"kafka", "postgres", "clickhouse", "tradeServer"} {
		if !r.Dependencies[dep].OK {
			t.Errorf("dependency %s missing or down: %+v", dep, r.Dependencies[dep])
		}
	}
	var gw struct {
		NewestQuoteAgeSeconds *float64 `json:"newestQuoteAgeSeconds"`
		Quotes                map[string]struct {
			AgeSeconds float64 `json:"ageSeconds"`
		} `json:"quotes"`
		TickTail struct {
			OK bool `json:"ok"`
		} `json:"tickTail"`
	}
	if err := json.Unmarshal(r.Roles["gateway"].Details, &gw); err != nil {
		t.Fatal(err)
	}
	if gw.NewestQuoteAgeSeconds == nil || len(gw.Quotes) == 0 || !gw.TickTail.OK {
		t.Errorf("gateway details %s: want quote ages per symbol and a following tick tail", r.Roles["gateway"].Details)
	}
	if _, ok := gw.Quotes["BTCUSD"]; !ok {
		t.Errorf("no quote age for BTCUSD in %s", r.Roles["gateway"].Details)
	}
	var pr struct {
		Projections map[string]struct {
			LagEvents  *int64   `json:"lagEvents"`
			LagSeconds *float64 `json:"lagSeconds"`
			Stuck      bool     `json:"stuck"`
		} `json:"projections"`
	}
	if err := json.Unmarshal(r.Roles["projector"].Details, &pr); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"projection.reference", "projection.trading", "projection.clickhouse.market", "projection.clickhouse.deals"} {
		st, ok := pr.Projections[name]
		if !ok || st.LagEvents == nil || st.LagSeconds == nil || st.Stuck {
			t.Errorf("projection %s in /readyz: %+v (present %v)", name, st, ok)
		}
	}
	var ex struct {
		LastHeartbeat time.Time `json:"lastHeartbeat"`
	}
	if err := json.Unmarshal(r.Roles["executor"].Details, &ex); err != nil || ex.LastHeartbeat.IsZero() {
		t.Errorf("executor details %s: want its last heartbeat (%v)", r.Roles["executor"].Details, err)
	}
	var rl struct {
		State string `json:"state"`
		Token int64  `json:"token"`
		Owner string `json:"owner"`
	}
	if err := json.Unmarshal(r.Roles["relay"].Details, &rl); err != nil || rl.State != "active" || rl.Token == 0 || rl.Owner == "" {
		t.Errorf("relay details %s: want the only relay active under a lease token (%v)", r.Roles["relay"].Details, err)
	}
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, series := range []string{`tradesvc_ready{role="gateway"} 1`, `tradesvc_dependency_up{dependency="postgres"} 1`,
		`tradesvc_consumer_lag_events{consumer="projection.trading"}`, `tradesvc_quote_age_seconds{symbol="BTCUSD"}`,
		`tradesvc_executor_heartbeat_age_seconds`, `tradesvc_relay_active 1`} {
		if !strings.Contains(string(body), series) {
			t.Errorf("metrics lack %s", series)
		}
	}
}

// Quotes stop (the trade server is disconnected, so the relay reads no tick): /readyz turns
// 503 saying the quotes are stale, and 200 again once they flow.
func TestReadyzNotReadyWhileQuotesAreStale(t *testing.T) {
	vars := fastHealth(apptest.Vars(t))
	vars["TRADESVC_READY_QUOTE_MAX_AGE"] = "2s"
	p := apptest.Launch(t, vars)
	base := metricsAddr(t, p.App)
	waitReady(t, base, true, "the service ready", nil)
	if err := p.App.Sim().SetFault(sim.Fault{Mode: sim.FaultDisconnect}); err != nil {
		t.Fatal(err)
	}
	r := waitReady(t, base, false, "not ready with stale quotes", func(r readyzReport) bool {
		return hasReason(r.Roles["gateway"].Reasons, "quotes are stale")
	})
	if !hasReason(r.Reasons, "gateway: quotes are stale") {
		t.Errorf("top-level reasons %q do not name the stale quotes", r.Reasons)
	}
	if err := p.App.Sim().SetFault(sim.Fault{Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, base, true, "ready again once quotes flow", nil)
}

func hasReason(reasons []string, part string) bool {
	for _, r := range reasons {
		if strings.Contains(r, part) {
			return true
		}
	}
	return false
}

// Postgres goes away (a proxy the test cuts, so the shared server stays up): /readyz answers
// 503 and names it; the projections retry rather than park anything; once Postgres is back
// the service is ready again and what happened meanwhile (a deposit on the trade server)
// reaches the read model: nothing lost.
func TestReadyzNamesPostgresWhileItIsDownAndProjectionsResume(t *testing.T) {
	vars := fastHealth(apptest.Vars(t))
	u, err := url.Parse(vars["TRADESVC_PG_URL"])
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	vars["TRADESVC_PG_URL"] = u.String()
	vars["TRADESVC_POISON_ATTEMPTS"] = "2"
	svc := apptest.Serve(t, apptest.Launch(t, vars))
	base := metricsAddr(t, svc.App)
	waitReady(t, base, true, "the service ready", nil)
	svc.WaitForAccount(t, 60*time.Second, 1001)
	balance := func() string {
		var b string
		if err := svc.PG.QueryRow(context.Background(), `SELECT balance::text FROM rm.accounts WHERE login = 1001`).Scan(&b); err != nil {
			return "error: " + err.Error()
		}
		return b
	}
	before := balance()

	proxy.Cut()
	r := waitReady(t, base, false, "not ready naming postgres", func(r readyzReport) bool {
		return !r.Dependencies["postgres"].OK
	})
	if !hasReason(r.Reasons, "postgres unreachable") {
		t.Errorf("reasons %q do not name postgres", r.Reasons)
	}
	if _, err := svc.App.Sim().Deposit(1001, dec.MustParse("123.45")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // projections retry against the cut database meanwhile
	proxy.Restore()
	waitReady(t, base, true, "ready again once postgres is back", nil)
	apptest.Eventually(t, 60*time.Second, "the deposit made while postgres was down in rm.accounts", func() bool {
		return balance() != before
	})
	want := dec.Add(dec.MustParse(before), dec.MustParse("123.45"))
	if got := balance(); dec.Cmp(dec.MustParse(got), want) != 0 {
		t.Errorf("balance %s after the outage, want %s (the deposit exactly once)", got, dec.String(want))
	}
	dls, err := listDeadLetters(t, svc)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 0 {
		t.Errorf("the outage parked %d messages: %+v", len(dls), dls)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
