package gateway_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"tradesvc/gateway"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwtest"
	"tradesvc/gateway/ratelimit"
)

func header(t *testing.T, r *gwclient.Response, name string) int {
	t.Helper()
	v := r.Header.Get(name)
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("header %s = %q (headers %v)", name, v, r.Header)
	}
	return n
}

func TestUsageHeadersOnKeyedResponsesOnly(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	e.Clock.Set(time.UnixMilli(1_800_000_000_000).Truncate(time.Minute).Add(time.Second))
	r := must(t)(c.Public(bg, "GET", "/v1/ping", nil))
	expectOK(t, r)
	for _, h := range []string{gateway.HeaderUsedWeight1m, gateway.HeaderOrderCount10s, gateway.HeaderOrderCount1m} {
		if r.Header.Get(h) != "" {
			t.Fatalf("unkeyed NONE call carries %s", h)
		}
	}
	// keyed: weights add up per the summary table
	steps := []struct {
		path   string
		params []string
		weight int
	}{
		{"/v1/ping", nil, 1},
		{"/v1/ticker/price", []string{"symbol", "EURUSD"}, 1},
		{"/v1/ticker/price", nil, 2},
		{"/v1/ticker/bookTicker", nil, 2},
		{"/v1/ticker/24hr", []string{"symbol", "EURUSD"}, 1},
		{"/v1/ticker/24hr", nil, 20},
		{"/v1/klines", []string{"symbol", "EURUSD", "interval", "1m", "limit", "100"}, 1},
		{"/v1/klines", []string{"symbol", "EURUSD", "interval", "1m"}, 2},
		{"/v1/klines", []string{"symbol", "EURUSD", "interval", "1m", "limit", "501"}, 5},
		{"/v1/ticks", []string{"symbol", "EURUSD"}, 2},
		{"/v1/exchangeInfo", nil, 10},
	}
	total := 0
	for _, s := range steps {
		r := must(t)(c.Keyed(bg, "GET", s.path, vals(s.params...)))
		expectOK(t, r)
		total += s.weight
		if got := header(t, r, gateway.HeaderUsedWeight1m); got != total {
			t.Fatalf("%s: used weight %d, want %d", s.path, got, total)
		}
		if header(t, r, gateway.HeaderOrderCount10s) != 0 || header(t, r, gateway.HeaderOrderCount1m) != 0 {
			t.Fatal("order counts on a read")
		}
	}
	// signed reads
	r = must(t)(c.Signed(bg, "GET", "/v1/accounts", nil, gwclient.InQuery))
	expectOK(t, r)
	if got := header(t, r, gateway.HeaderUsedWeight1m); got != total+5 {
		t.Fatalf("accounts weight: %d after %d", got, total)
	}
	// the next minute starts from zero
	e.Clock.Advance(time.Minute)
	r = must(t)(c.Keyed(bg, "GET", "/v1/ping", nil))
	if got := header(t, r, gateway.HeaderUsedWeight1m); got != 1 {
		t.Fatalf("new minute: used %d", got)
	}
}

func TestWeightBreachIs429ThenContinuingIs418WithEscalation(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	e.Keys.Put(gateway.Key{ID: "small", APIKey: "small-key", Secret: []byte("s"), WeightPerMinute: 3})
	c.APIKey = "small-key"
	t0 := time.UnixMilli(1_800_000_000_000).Truncate(time.Minute).Add(10 * time.Second)
	e.Clock.Set(t0)
	for i := 1; i <= 3; i++ {
		r := must(t)(c.Keyed(bg, "GET", "/v1/ticker/price", vals("symbol", "EURUSD")))
		expectOK(t, r)
		if header(t, r, gateway.HeaderUsedWeight1m) != i {
			t.Fatalf("used %s", r.Header.Get(gateway.HeaderUsedWeight1m))
		}
	}
	r := must(t)(c.Keyed(bg, "GET", "/v1/ticker/price", vals("symbol", "EURUSD")))
	expectErr(t, r, 429, -1003)
	if r.Header.Get("Retry-After") != "50" {
		t.Fatalf("Retry-After = %q, want 50", r.Header.Get("Retry-After"))
	}
	if header(t, r, gateway.HeaderUsedWeight1m) != 3 {
		t.Fatal("usage headers missing on 429")
	}
	// continuing before Retry-After: 418, first step 2 minutes
	e.Clock.Advance(time.Second)
	r = must(t)(c.Keyed(bg, "GET", "/v1/ping", nil))
	expectErr(t, r, 418, -1003)
	if r.Header.Get("Retry-After") != "120" {
		t.Fatalf("Retry-After = %q, want 120", r.Header.Get("Retry-After"))
	}
	// retrying through the 418 lengthens the ban
	e.Clock.Advance(60 * time.Second)
	r = must(t)(c.Keyed(bg, "GET", "/v1/ping", nil))
	expectErr(t, r, 418, -1003)
	if r.Header.Get("Retry-After") != "120" {
		t.Fatalf("Retry-After = %q, want 120 (ban restarted)", r.Header.Get("Retry-After"))
	}
	// after the ban: allowed again
	e.Clock.Advance(121 * time.Second)
	expectOK(t, must(t)(c.Keyed(bg, "GET", "/v1/ping", nil)))
	// a second offence escalates to 1 hour
	for i := 0; i < 2; i++ {
		_, _ = c.Keyed(bg, "GET", "/v1/ping", nil)
	}
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/ping", nil)), 429, -1003)
	r = must(t)(c.Keyed(bg, "GET", "/v1/ping", nil))
	expectErr(t, r, 418, -1003)
	if r.Header.Get("Retry-After") != "3600" {
		t.Fatalf("Retry-After = %q, want 3600", r.Header.Get("Retry-After"))
	}
	// another key is unaffected
	other := e.Client()
	if other.APIKey != gwtest.APIKey {
		t.Fatal("seed key")
	}
	expectOK(t, must(t)(other.Keyed(bg, "GET", "/v1/ping", nil)))
}

func TestOrdersBreachIs1015(t *testing.T) {
	var calls int
	e, c := start(t, gateway.Config{}, tradeEndpoint(&calls))
	e.Keys.Put(gateway.Key{ID: "ord", APIKey: "ord-key", Secret: []byte("s"), Logins: []int64{1001}, Orders10s: 2})
	c.APIKey, c.Secret = "ord-key", []byte("s")
	t0 := time.UnixMilli(1_800_000_000_000).Truncate(time.Minute).Add(3 * time.Second)
	e.Clock.Set(t0)
	for i := 1; i <= 2; i++ {
		r := must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "1001"), gwclient.InBody))
		expectOK(t, r)
		if header(t, r, gateway.HeaderOrderCount10s) != i || header(t, r, gateway.HeaderOrderCount1m) != i {
			t.Fatalf("order headers %v", r.Header)
		}
	}
	r := must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "1001"), gwclient.InBody))
	expectErr(t, r, 429, -1015)
	if r.Header.Get("Retry-After") != "7" {
		t.Fatalf("Retry-After = %q, want 7", r.Header.Get("Retry-After"))
	}
	if calls != 2 {
		t.Fatalf("handler ran %d times", calls)
	}
	// the next 10-second window is open again
	e.Clock.Advance(7 * time.Second)
	r = must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "1001"), gwclient.InBody))
	expectOK(t, r)
	if header(t, r, gateway.HeaderOrderCount10s) != 1 || header(t, r, gateway.HeaderOrderCount1m) != 3 {
		t.Fatalf("order headers %v", r.Header)
	}
}

func TestExchangeInfoReportsKeyLimits(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	type info struct {
		RateLimits []struct {
			RateLimitType string `json:"rateLimitType"`
			Interval      string `json:"interval"`
			IntervalNum   int    `json:"intervalNum"`
			Limit         int    `json:"limit"`
		} `json:"rateLimits"`
	}
	def := decode[info](t, must(t)(c.Public(bg, "GET", "/v1/exchangeInfo", nil)))
	want := []int{1200, 100, 1200}
	for i, rl := range def.RateLimits {
		if rl.Limit != want[i] {
			t.Fatalf("default limits %+v", def.RateLimits)
		}
	}
	e.Keys.Put(gateway.Key{ID: "big", APIKey: "big-key", Secret: []byte("s"), WeightPerMinute: 6000, Orders1m: 3000})
	c.APIKey = "big-key"
	r := must(t)(c.Keyed(bg, "GET", "/v1/exchangeInfo", nil))
	got := decode[info](t, r)
	if got.RateLimits[0].Limit != 6000 || got.RateLimits[1].Limit != 100 || got.RateLimits[2].Limit != 3000 ||
		got.RateLimits[1].Interval != "SECOND" || got.RateLimits[1].IntervalNum != 10 || got.RateLimits[0].RateLimitType != "REQUEST_WEIGHT" {
		t.Fatalf("key limits %+v", got.RateLimits)
	}
	if header(t, r, gateway.HeaderUsedWeight1m) != 10 {
		t.Fatal("exchangeInfo weight")
	}
}

// Issue 17, item 5, through the pipeline: an ORDERS 429 throttles order-affecting requests
// only. The same key's reads go on being served (and charged); an order inside the
// Retry-After earns 418, which bans the whole key, reads included; a read during the ban
// restarts it.
func TestOrdersBreachLeavesReadsServedUntilAnOrderEarnsTheBan(t *testing.T) {
	var calls int
	e, c := start(t, gateway.Config{}, tradeEndpoint(&calls))
	e.Keys.Put(gateway.Key{ID: "burst", APIKey: "burst-key", Secret: []byte("s"), Logins: []int64{1001}, Orders10s: 2})
	c.APIKey, c.Secret = "burst-key", []byte("s")
	e.Clock.Set(time.UnixMilli(1_800_000_000_000).Truncate(time.Minute).Add(2 * time.Second))
	order := func() *gwclient.Response {
		return must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "1001"), gwclient.InBody))
	}
	poll := func() *gwclient.Response {
		return must(t)(c.Signed(bg, "GET", "/v1/positions", vals("login", "1001"), gwclient.InQuery))
	}
	expectOK(t, order())
	expectOK(t, order())
	r := order()
	expectErr(t, r, 429, -1015)
	if r.Header.Get("Retry-After") != "8" {
		t.Fatalf("Retry-After %q, want 8", r.Header.Get("Retry-After"))
	}
	e.Clock.Advance(time.Second)
	for i := 0; i < 3; i++ {
		r = poll()
		expectOK(t, r)
	}
	if w := header(t, r, gateway.HeaderUsedWeight1m); w != 6 { // 3 orders + 3 polls
		t.Fatalf("weight %d after three polls, want 6", w)
	}
	e.Clock.Advance(time.Second)
	r = order()
	expectErr(t, r, 418, -1003) // a ban is the key's, whichever bucket earned it
	if r.Header.Get("Retry-After") != "120" {
		t.Fatalf("Retry-After %q, want 120", r.Header.Get("Retry-After"))
	}
	if calls != 2 {
		t.Fatalf("handler ran %d times, want 2", calls)
	}
	e.Clock.Advance(100 * time.Second)
	r = poll()
	expectErr(t, r, 418, -1003)
	if r.Header.Get("Retry-After") != "120" {
		t.Fatalf("poll during the ban: Retry-After %q, want 120 (restarted)", r.Header.Get("Retry-After"))
	}
	e.Clock.Advance(119 * time.Second) // past the first ban's end, inside the restarted one
	expectErr(t, poll(), 418, -1003)
	e.Clock.Advance(121 * time.Second)
	expectOK(t, poll())
	expectOK(t, order())
}

// unreachableLimits is a shared rate-limit store whose database is down.
type unreachableLimits struct{ charges int }

func (u *unreachableLimits) Charge(context.Context, string, ratelimit.Charge) (ratelimit.Decision, ratelimit.Usage, error) {
	u.charges++
	return ratelimit.Decision{}, ratelimit.Usage{}, errors.New("postgres unreachable")
}

func (u *unreachableLimits) Usage(context.Context, string, int64) (ratelimit.Usage, error) {
	return ratelimit.Usage{}, errors.New("postgres unreachable")
}

// A gateway whose shared rate-limit store cannot decide serves no keyed request: -1000 (503,
// nothing was done), without made-up usage headers; unkeyed requests, which no limit counts,
// are served.
func TestSharedRateLimitsUnreachableAnswer1000(t *testing.T) {
	e := gwtest.NewEnv()
	store := &unreachableLimits{}
	e.RateLimits = store
	e.Start(t, gateway.Config{})
	c := e.Client()
	r := must(t)(c.Keyed(bg, "GET", "/v1/ping", nil))
	expectErr(t, r, 503, -1000)
	if r.Header.Get(gateway.HeaderUsedWeight1m) != "" {
		t.Errorf("usage headers without a store that could say them: %v", r.Header)
	}
	if store.charges != 1 {
		t.Errorf("%d charges, want 1", store.charges)
	}
	expectOK(t, must(t)(c.Public(bg, "GET", "/v1/ping", nil)))
}
