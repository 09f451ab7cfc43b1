package e2e_test

import (
	"maps"
	"net/http"
	"strconv"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/gateway/gwclient"
)

// The spec's limits are per API key across all source addresses, so two gateways share one
// key's counters, throttles and bans (--rate-limit-store postgres): a key that alternates
// between them gets its limit once, not twice; the 429 earned on one makes the next request
// on the other a 418, and the ban holds on both.
func TestRateLimitsHoldAcrossTwoGateways(t *testing.T) {
	vars := apptest.Vars(t)
	vars["TRADESVC_RATE_LIMIT_STORE"] = "postgres"
	first := apptest.Serve(t, apptest.Launch(t, vars))
	second := maps.Clone(vars)
	second["TRADESVC_ROLES"] = "gateway" // a second gateway process over the same stores
	gws := []*apptest.Service{first, apptest.Serve(t, apptest.Launch(t, second))}
	e := envOn(t, first, "BTCUSD")

	retryAfter := func(t *testing.T, res *gwclient.Response) int {
		t.Helper()
		n, err := strconv.Atoi(res.Header.Get("Retry-After"))
		if err != nil {
			t.Fatalf("Retry-After %q on %d", res.Header.Get("Retry-After"), res.Status)
		}
		return n
	}

	t.Run("REQUEST_WEIGHT: alternating gateways gets the limit once, then 429, then 418 on the other", func(t *testing.T) {
		const limit = 20
		k := first.CreateKey(t, []int64{loginReal1}, false, nil)
		e.svc.SetKeyLimits(t, k.APIKey, limit, 0, 0) // before the key's first use: no cache to expire
		cs := []*gwclient.Client{gws[0].Client(k), gws[1].Client(k)}
		startEarlyInMinute()
		minute := nowMs() / 60_000
		served := 0
		for i := range limit {
			res := get(t, cs[i%2], "/v1/ping", nil)
			wantOK(t, res)
			served++
			if w := usedWeight(t, res); w != i+1 {
				t.Fatalf("request %d on gateway %d: %s = %d, want %d (one counter for both gateways)",
					i+1, i%2+1, hdrWeight, w, i+1)
			}
		}
		res := get(t, cs[limit%2], "/v1/ping", nil)
		wantErr(t, res, http.StatusTooManyRequests, -1003)
		if usedWeight(t, res) != limit {
			t.Errorf("the 429 charged something")
		}
		// The other gateway, inside the Retry-After the first one gave: 418, a 2-minute ban.
		res = get(t, cs[(limit+1)%2], "/v1/ping", nil)
		wantErr(t, res, http.StatusTeapot, -1003)
		if ra := retryAfter(t, res); ra < 119 || ra > 120 {
			t.Errorf("418 Retry-After %d, want 120 s", ra)
		}
		// Every later request, on either gateway, is 418: nothing more is served this minute.
		for i := range 6 {
			res = get(t, cs[i%2], "/v1/ping", nil)
			if res.Status == http.StatusOK {
				served++
			}
			wantErr(t, res, http.StatusTeapot, -1003)
		}
		if served != limit {
			t.Errorf("%d requests served, want exactly the key's limit %d", served, limit)
		}
		if nowMs()/60_000 != minute {
			t.Fatal("the sequence crossed a minute window: its assertions are void")
		}
	})

	t.Run("ORDERS: a -1015 on one gateway makes the next order on the other a 418, and the ban holds on both", func(t *testing.T) {
		k := first.CreateKey(t, []int64{loginReal1}, false, nil)
		e.svc.SetKeyLimits(t, k.APIKey, 0, 3, 0)
		trs := []*trader{{e: e, c: gws[0].Client(k), key: k}, {e: e, c: gws[1].Client(k), key: k}}
		for _, gw := range gws {
			probe := &trader{e: e, c: gw.Client(e.unlimitedKey(t))}
			probe.waitExecutionPath(t) // with another key: the probe must not consume this key's ORDERS
		}
		// An order of an invalid type is charged ORDERS and refused before anything is
		// recorded: the sequence trades nothing.
		order := func(gw int) *gwclient.Response {
			return trs[gw].post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01", "type", "NOPE"))
		}
		if into := nowMs() % 10_000; into > 1_000 {
			time.Sleep(time.Duration(10_000-into+50) * time.Millisecond)
		}
		window := nowMs() / 10_000
		for i := range 3 {
			res := order(i % 2)
			if res.Status == http.StatusTooManyRequests || res.Status == http.StatusTeapot {
				t.Fatalf("order %d on gateway %d: %d %s, want it within the limit", i+1, i%2+1, res.Status, res.Body)
			}
			if got := res.Header.Get(hdrOrders10); got != strconv.Itoa(i+1) {
				t.Fatalf("order %d on gateway %d: %s = %q, want %d", i+1, i%2+1, hdrOrders10, got, i+1)
			}
		}
		res := order(1) // the fourth, on gateway 2
		wantErr(t, res, http.StatusTooManyRequests, -1015)
		res = order(0) // inside the Retry-After, on gateway 1
		wantErr(t, res, http.StatusTeapot, -1003)
		if ra := retryAfter(t, res); ra < 119 || ra > 120 {
			t.Errorf("418 Retry-After %d, want 120 s", ra)
		}
		if nowMs()/10_000 != window {
			t.Fatal("the sequence crossed a 10-second window: its assertions are void")
		}
		// The ban is the key's on every gateway: a read on gateway 2 is refused too.
		res = trs[1].get(t, "/v1/positions", vals("login", itoa(loginReal1)))
		wantErr(t, res, http.StatusTeapot, -1003)
	})
}
