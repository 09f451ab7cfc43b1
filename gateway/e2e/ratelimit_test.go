package e2e_test

import (
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"testing"
	"time"

	"tradesvc/gateway/gwclient"
)

type rateLimit struct {
	RateLimitType string `json:"rateLimitType"`
	Interval      string `json:"interval"`
	IntervalNum   int    `json:"intervalNum"`
	Limit         int    `json:"limit"`
}

func limits(weight, orders10s, orders1m int) []rateLimit {
	return []rateLimit{
		{"REQUEST_WEIGHT", "MINUTE", 1, weight},
		{"ORDERS", "SECOND", 10, orders10s},
		{"ORDERS", "MINUTE", 1, orders1m},
	}
}

// testRateLimits: per-key limits from cmd.api_keys, weight counting by endpoint weight,
// usage headers on every keyed answer (errors included), 429 then 418 with Retry-After,
// and exchangeInfo reporting the key's live limits.
func testRateLimits(t *testing.T, e *env) {
	exchangeLimits := func(t *testing.T, c *gwclient.Client) ([]rateLimit, *gwclient.Response) {
		t.Helper()
		res := get(t, c, "/v1/exchangeInfo", url.Values{"symbol": {"BTCUSD"}})
		wantOK(t, res)
		var info struct {
			RateLimits []rateLimit `json:"rateLimits"`
		}
		decode(t, res, &info)
		return info.RateLimits, res
	}
	t.Run("exchangeInfo reports defaults without key and the key's live limits with it", func(t *testing.T) {
		got, res := exchangeLimits(t, e.client(noKey))
		if !reflect.DeepEqual(got, limits(1200, 100, 1200)) {
			t.Errorf("unkeyed rateLimits %+v", got)
		}
		noUsageHeaders(t, res)
		k := e.svc.CreateKey(t, []int64{loginReal1}, false, nil)
		e.svc.SetKeyLimits(t, k.APIKey, 1000, 7, 70) // before the key's first use: no cache to expire
		c := e.client(k)
		got, res = exchangeLimits(t, c)
		if !reflect.DeepEqual(got, limits(1000, 7, 70)) {
			t.Errorf("keyed rateLimits %+v, want 1000/7/70", got)
		}
		if w := usedWeight(t, res); w != 10 {
			t.Errorf("exchangeInfo weight %d, want 10", w)
		}
		// Changed while in use: visible within seconds (key cache TTL).
		e.svc.SetKeyLimits(t, k.APIKey, 900, 8, 80)
		poll(t, 5*time.Second, 250*time.Millisecond, "new limits in exchangeInfo", func() bool {
			got, _ := exchangeLimits(t, c)
			return reflect.DeepEqual(got, limits(900, 8, 80))
		})
		// Back to the defaults when the key's own values are cleared.
		e.svc.SetKeyLimits(t, k.APIKey, 0, 0, 0)
		poll(t, 5*time.Second, 250*time.Millisecond, "default limits in exchangeInfo", func() bool {
			got, _ := exchangeLimits(t, c)
			return reflect.DeepEqual(got, limits(1200, 100, 1200))
		})
	})
	t.Run("endpoint weights as in the summary table", func(t *testing.T) {
		c := e.client(e.svc.CreateKey(t, []int64{loginReal1}, false, nil))
		startEarlyInMinute()
		acct := url.Values{"login": {"1001"}}
		cases := []struct {
			name   string
			weight int
			do     func() *gwclient.Response
		}{
			{"ping", 1, func() *gwclient.Response { return get(t, c, "/v1/ping", nil) }},
			{"time", 1, func() *gwclient.Response { return get(t, c, "/v1/time", nil) }},
			{"exchangeInfo", 10, func() *gwclient.Response { return get(t, c, "/v1/exchangeInfo", nil) }},
			{"ticker/price symbol", 1, func() *gwclient.Response { return get(t, c, "/v1/ticker/price", url.Values{"symbol": {"BTCUSD"}}) }},
			{"ticker/price all", 2, func() *gwclient.Response { return get(t, c, "/v1/ticker/price", nil) }},
			{"bookTicker symbol", 1, func() *gwclient.Response { return get(t, c, "/v1/ticker/bookTicker", url.Values{"symbol": {"BTCUSD"}}) }},
			{"bookTicker all", 2, func() *gwclient.Response { return get(t, c, "/v1/ticker/bookTicker", nil) }},
			{"24hr symbol", 1, func() *gwclient.Response { return get(t, c, "/v1/ticker/24hr", url.Values{"symbol": {"BTCUSD"}}) }},
			{"24hr all", 20, func() *gwclient.Response { return get(t, c, "/v1/ticker/24hr", nil) }},
			{"klines limit 100", 1, func() *gwclient.Response {
				return get(t, c, "/v1/klines", url.Values{"symbol": {"BTCUSD"}, "interval": {"1m"}, "limit": {"100"}})
			}},
			{"klines default", 2, func() *gwclient.Response {
				return get(t, c, "/v1/klines", url.Values{"symbol": {"BTCUSD"}, "interval": {"1m"}})
			}},
			{"klines limit 500", 2, func() *gwclient.Response {
				return get(t, c, "/v1/klines", url.Values{"symbol": {"BTCUSD"}, "interval": {"1m"}, "limit": {"500"}})
			}},
			{"klines limit 1000", 5, func() *gwclient.Response {
				return get(t, c, "/v1/klines", url.Values{"symbol": {"BTCUSD"}, "interval": {"1m"}, "limit": {"1000"}})
			}},
			{"ticks", 2, func() *gwclient.Response { return get(t, c, "/v1/ticks", url.Values{"symbol": {"BTCUSD"}}) }},
			{"account", 1, func() *gwclient.Response { return signed(t, c, "/v1/account", acct, gwclient.InQuery) }},
			{"accounts", 5, func() *gwclient.Response { return signed(t, c, "/v1/accounts", nil, gwclient.InQuery) }},
		}
		used := 0
		for _, tc := range cases {
			res := tc.do()
			wantOK(t, res)
			w := usedWeight(t, res)
			if w-used != tc.weight {
				t.Errorf("%s charged %d, want %d", tc.name, w-used, tc.weight)
			}
			if res.Header.Get(hdrOrders10) != "0" || res.Header.Get(hdrOrders1m) != "0" {
				t.Errorf("%s: order counters %q/%q, want 0 for reads", tc.name, res.Header.Get(hdrOrders10), res.Header.Get(hdrOrders1m))
			}
			used = w
		}
	})
	t.Run("weight counting, 429 -1003, then 418", func(t *testing.T) {
		k := e.svc.CreateKey(t, []int64{loginReal1}, false, nil)
		e.svc.SetKeyLimits(t, k.APIKey, 5, 0, 0)
		c := e.client(k)
		startEarlyInMinute()
		step := func(t *testing.T, res *gwclient.Response, status, wantWeight int) {
			t.Helper()
			if res.Status != status {
				t.Fatalf("status %d, want %d: %s", res.Status, status, res.Body)
			}
			if w := usedWeight(t, res); w != wantWeight {
				t.Errorf("%s = %d, want %d", hdrWeight, w, wantWeight)
			}
		}
		sym := url.Values{"symbol": {"BTCUSD"}}
		step(t, get(t, c, "/v1/ping", nil), 200, 1)         // NONE with key: weight 1
		step(t, get(t, c, "/v1/ticker/price", sym), 200, 2) // with symbol: 1
		res := get(t, c, "/v1/ticker/price", url.Values{"symbol": {"btcusd"}})
		wantErr(t, res, http.StatusBadRequest, -1121) // errors are charged
		step(t, res, 400, 3)                          // and carry the headers
		res = raw(t, c, http.MethodGet, "/v1/account", "login=1001&timestamp="+itoa(nowMs())+"&signature=00", "", true)
		wantErr(t, res, http.StatusUnauthorized, -1022) // unauthenticated: not charged
		step(t, res, 401, 3)
		step(t, get(t, c, "/v1/ticker/price", nil), 200, 5) // without symbol: 2
		before := nowMs()
		res = get(t, c, "/v1/ticker/price", sym) // 5 + 1 > 5
		wantErr(t, res, http.StatusTooManyRequests, -1003)
		step(t, res, 429, 5)
		ra, err := strconv.Atoi(res.Header.Get("Retry-After"))
		left := int((60_000 - before%60_000 + 999) / 1000) // seconds to the end of the window
		if err != nil || ra < 1 || ra > 60 || ra < left-1 || ra > left+1 {
			t.Errorf("429 Retry-After %q, want about %d s (end of the minute window)", res.Header.Get("Retry-After"), left)
		}
		// Continuing before Retry-After earns a ban: 418, Retry-After = remaining ban (2 min).
		for i := 0; i < 2; i++ {
			res = get(t, c, "/v1/ping", nil)
			wantErr(t, res, http.StatusTeapot, -1003)
			usedWeight(t, res)
			ra, err = strconv.Atoi(res.Header.Get("Retry-After"))
			if err != nil || ra < 115 || ra > 120 {
				t.Errorf("418 Retry-After %q, want about 120 s", res.Header.Get("Retry-After"))
			}
		}
		res = signed(t, c, "/v1/account", url.Values{"login": {"1001"}}, gwclient.InQuery)
		wantErr(t, res, http.StatusTeapot, -1003)
		// The ban is the key's: other keys and unkeyed calls are unaffected.
		wantOK(t, get(t, e.client(e.main), "/v1/ticker/price", sym))
		wantOK(t, get(t, e.client(noKey), "/v1/ping", nil))
	})
	t.Run("an ORDERS 429 throttles orders only; an order inside Retry-After earns 418 for the whole key", func(t *testing.T) {
		testOrdersBurstDoesNotBanReads(t, e)
	})
}

// testOrdersBurstDoesNotBanReads (issue 17, item 5): an ORDERS burst earns -1015; the same
// key's positions poll is then served (it consumes weight only); another order inside the
// Retry-After earns 418, which bans the whole key; a positions poll during the ban is 418 and
// restarts it.
func testOrdersBurstDoesNotBanReads(t *testing.T, e *env) {
	k := e.svc.CreateKey(t, []int64{loginReal2}, false, nil)
	e.svc.SetKeyLimits(t, k.APIKey, 0, 2, 0) // before the key's first use: no cache to expire
	tr := &trader{e: e, c: e.client(k), key: k}
	positions := func() *gwclient.Response { return tr.get(t, "/v1/positions", vals("login", itoa(loginReal2))) }
	order := func(i int) *gwclient.Response {
		return tr.post(t, "/v1/order", market(loginReal2, "BTCUSD", "BUY", "0.01", "newClientOrderId", "burst-"+itoa(int64(i))))
	}
	retryAfter := func(res *gwclient.Response) int {
		t.Helper()
		n, err := strconv.Atoi(res.Header.Get("Retry-After"))
		if err != nil {
			t.Fatalf("Retry-After %q on %d", res.Header.Get("Retry-After"), res.Status)
		}
		return n
	}
	e.trader(t).waitExecutionPath(t) // with another key: the probe must not consume this key's ORDERS
	// The ORDERS bucket of 2 per 10 s is epoch-aligned: start early in a window so that the
	// whole sequence falls inside one Retry-After.
	if into := nowMs() % 10_000; into > 1_000 {
		time.Sleep(time.Duration(10_000-into+50) * time.Millisecond)
	}
	window := nowMs() / 10_000
	wantOK(t, order(1))
	wantOK(t, order(2))
	res := order(3)
	wantErr(t, res, http.StatusTooManyRequests, -1015)
	throttled := retryAfter(res)
	if throttled < 1 || throttled > 10 {
		t.Fatalf("429 Retry-After %d, want 1..10 s (the 10-second window)", throttled)
	}
	// Same key, inside the Retry-After: the positions poll is served (two of them).
	for i := 0; i < 2; i++ {
		res = positions()
		if res.Status != http.StatusOK {
			t.Fatalf("positions poll after a -1015: %d %s, want 200 (only order-affecting requests are throttled)", res.Status, res.Body)
		}
		if res.Header.Get(hdrOrders10) != "2" {
			t.Errorf("%s = %q after the burst, want 2", hdrOrders10, res.Header.Get(hdrOrders10))
		}
	}
	// Another order inside the Retry-After: 418, a 2-minute ban of the whole key.
	res = order(4)
	wantErr(t, res, http.StatusTeapot, -1003)
	if ra := retryAfter(res); ra < 119 || ra > 120 {
		t.Fatalf("418 Retry-After %d, want 120 s", ra)
	}
	if nowMs()/10_000 != window {
		t.Fatal("the sequence crossed a 10-second window: its assertions are void")
	}
	// A poll during the ban is refused and restarts it: 3 s later the ban is 120 s again.
	time.Sleep(3 * time.Second)
	res = positions()
	wantErr(t, res, http.StatusTeapot, -1003)
	if ra := retryAfter(res); ra < 119 {
		t.Fatalf("poll during the ban: Retry-After %d, want about 120 s (the ban restarted, not 117)", ra)
	}
	// The order that earned the ban was never taken: two orders reached the trade server.
	poll(t, 20*time.Second, 200*time.Millisecond, "the burst's two positions on the trade server", func() bool {
		return e.simPositionCount(t, loginReal2, "BTCUSD") == 2
	})
	// Other keys are unaffected.
	wantOK(t, get(t, e.client(e.main), "/v1/ticker/price", url.Values{"symbol": {"BTCUSD"}}))
}

// startEarlyInMinute sleeps into the next minute when little of the current one is left: the
// weight window is the epoch-aligned minute, and a short sequence of requests must not
// straddle a window boundary.
func startEarlyInMinute() {
	if into := time.Duration(nowMs()%60_000) * time.Millisecond; into > 45*time.Second {
		time.Sleep(time.Minute - into + 100*time.Millisecond)
	}
}
