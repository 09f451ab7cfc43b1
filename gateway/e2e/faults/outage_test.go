//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/health"
)

// localService runs infra/local/<script> on the test profile's instance (testRunDir).
func localService(t *testing.T, script, action, port string) {
	t.Helper()
	if err := runLocal(testRunDir(t), script, action, port); err != nil {
		t.Fatal(err)
	}
}

// gatewayQuotes is the part of the gateway's readiness details these tests read.
type gatewayQuotes struct {
	NewestQuoteAgeSeconds *float64 `json:"newestQuoteAgeSeconds"`
}

func gatewayDetails(t *testing.T, r health.Report) gatewayQuotes {
	t.Helper()
	b, err := json.Marshal(r.Roles["gateway"].Details)
	if err != nil {
		t.Fatal(err)
	}
	var g gatewayQuotes
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func hasReason(r health.Report, part string) bool {
	for _, why := range r.Reasons {
		if strings.Contains(why, part) {
			return true
		}
	}
	return false
}

// The Kafka broker is stopped for 30 s: the gateway's quotes go stale and /readyz says so
// (not ready, quotes stale, Kafka unreachable) while they are; once the broker is back the
// relay, the tick tail and the projections reconnect by themselves: a quote newer than the
// restart reaches the gateway within 30 s, and the service is ready again. (It takes about 4 s
// on an idle host: the producer replaced 2 s after the broker's start, the tail's reconnect
// after that; the bound is for liveness, not speed: a slow host once took more than 10.)
func TestKafkaStoppedQuotesResumeAndReadyzReportsTheStaleness(t *testing.T) {
	vars := apptest.Vars(t)
	vars["TRADESVC_HEALTH_INTERVAL"] = "500ms"
	vars["TRADESVC_READY_QUOTE_MAX_AGE"] = "5s"
	p := apptest.Launch(t, vars)
	svc := apptest.Serve(t, p)
	svc.WaitForQuote(t, 60*time.Second, "BTCUSD")
	apptest.Eventually(t, 60*time.Second, "the service ready", func() bool { return svc.App.Health().Report().Ready })

	localService(t, "kafka.sh", "stop", "29092")
	t.Cleanup(func() { localService(t, "kafka.sh", "start", "29092") }) // idempotent: leaves the broker running
	stopped := time.Now()
	sawStale := false
	for time.Since(stopped) < 30*time.Second {
		r := svc.App.Health().Report()
		if r.CheckedAt.After(stopped) {
			if r.Ready {
				if age := gatewayDetails(t, r).NewestQuoteAgeSeconds; age != nil && *age > 5 {
					t.Fatalf("/readyz ready with quotes %.1fs old while Kafka is down", *age)
				}
			} else if hasReason(r, "quotes are stale") {
				sawStale = true
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !sawStale {
		t.Fatalf("/readyz never said the quotes were stale during a 30 s Kafka outage; last report %+v", svc.App.Health().Report())
	}
	localService(t, "kafka.sh", "start", "29092")
	restarted := time.Now()
	deadline := restarted.Add(30 * time.Second)
	for {
		r := svc.App.Health().Report()
		if age := gatewayDetails(t, r).NewestQuoteAgeSeconds; age != nil &&
			r.CheckedAt.Add(-time.Duration(*age*float64(time.Second))).After(restarted) {
			break // a quote stamped after the restart is in the gateway
		}
		if time.Now().After(deadline) {
			t.Fatalf("no quote newer than the broker's restart within 30 s; last report %+v", r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	apptest.Eventually(t, 60*time.Second, "the service ready again", func() bool { return svc.App.Health().Report().Ready })
}

// Postgres is stopped: /readyz names it (postgres unreachable) while it is down, and reads
// and listen-key calls answer 503 -1000 (nothing was done; never 500); the projections retry
// rather than park anything; once it is back the service is ready again and a deposit made
// during the outage is in the read model exactly once.
func TestPostgresStoppedReadyzNamesItAndProjectionsResume(t *testing.T) {
	vars := apptest.Vars(t)
	vars["TRADESVC_HEALTH_INTERVAL"] = "500ms"
	svc := apptest.Serve(t, apptest.Launch(t, vars))
	ctx := context.Background()
	svc.WaitForAccount(t, 60*time.Second, 1001)
	apptest.Eventually(t, 60*time.Second, "the service ready", func() bool { return svc.App.Health().Report().Ready })
	c := svc.Client(unlimited(t, svc))
	openOrders := func() (*gwclient.Response, error) {
		return c.Signed(ctx, http.MethodGet, "/v1/openOrders", url.Values{"login": {"1001"}}, gwclient.InQuery)
	}
	if res, err := openOrders(); err != nil || res.Status != http.StatusOK { // the key and the account cached
		t.Fatalf("GET /v1/openOrders before the outage: %v %+v", err, res)
	}
	balance := func() (string, error) {
		var b string
		err := svc.PG.QueryRow(ctx, `SELECT balance::text FROM rm.accounts WHERE login = 1001`).Scan(&b)
		return b, err
	}
	before, err := balance()
	if err != nil {
		t.Fatal(err)
	}

	localService(t, "postgres.sh", "stop", "25432")
	t.Cleanup(func() { localService(t, "postgres.sh", "start", "25432") }) // idempotent
	apptest.Eventually(t, 30*time.Second, "/readyz naming postgres", func() bool {
		r := svc.App.Health().Report()
		return !r.Ready && !r.Dependencies["postgres"].OK && hasReason(r, "postgres unreachable")
	})
	for name, call := range map[string]func() (*gwclient.Response, error){
		"GET /v1/openOrders": openOrders,
		"POST /v1/listenKey": func() (*gwclient.Response, error) { return c.Keyed(ctx, http.MethodPost, "/v1/listenKey", nil) },
	} {
		res, err := call()
		if err != nil {
			t.Fatalf("%s with Postgres down: %v", name, err)
		}
		if e, _ := res.Err(); res.Status != http.StatusServiceUnavailable || e.Code != -1000 {
			t.Errorf("%s with Postgres down: %d %s, want 503 -1000", name, res.Status, res.Body)
		}
	}
	if _, err := svc.App.Sim().Deposit(1001, dec.MustParse("77.77")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second) // the projections retry against the stopped database meanwhile
	localService(t, "postgres.sh", "start", "25432")
	apptest.Eventually(t, 90*time.Second, "the service ready again", func() bool { return svc.App.Health().Report().Ready })
	want := dec.Add(dec.MustParse(before), dec.MustParse("77.77"))
	apptest.Eventually(t, 60*time.Second, "the deposit made during the outage in rm.accounts", func() bool {
		b, err := balance()
		return err == nil && dec.Cmp(dec.MustParse(b), want) == 0
	})
	listCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	dls, err := app.ListDeadLetters(listCtx, svc.Config, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(dls) != 0 {
		t.Errorf("the outage parked %d messages: %+v", len(dls), dls)
	}
}
