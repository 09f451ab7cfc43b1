package gateway_test

import (
	"errors"
	"strconv"
	"testing"

	"tradesvc/gateway"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwtest"
)

// The order, position and trade reads over the fake gateway, whose trading read model is
// empty: parameter checks, scope, weights and the empty answers (data is covered end to end).
func TestOrderReadsCheckTheirParameters(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	get := func(path string, kv ...string) *gwclient.Response {
		return must(t)(c.Signed(bg, "GET", path, vals(kv...), gwclient.InQuery))
	}
	expectErr(t, get("/v1/order", "login", "1001"), 400, -1102)
	expectErr(t, get("/v1/order", "login", "1001", "orderId", "x"), 400, -1130)
	expectErr(t, get("/v1/order", "login", "1001", "orderId", "5"), 400, -2013)
	expectErr(t, get("/v1/order", "login", "1001", "origClientOrderId", "abc"), 400, -2013)
	expectErr(t, get("/v1/order", "orderId", "5"), 400, -1102)
	expectErr(t, get("/v1/order", "login", "2001", "orderId", "5"), 400, -2022)
	expectErr(t, get("/v1/openOrders", "login", "1001", "symbol", "eurusd"), 400, -1121)
	expectErr(t, get("/v1/allOrders", "login", "1001", "limit", "0"), 400, -1130)
	expectErr(t, get("/v1/allOrders", "login", "1001", "limit", "1001"), 400, -1130)
	expectErr(t, get("/v1/allOrders", "login", "1001", "startTime", "2000", "endTime", "1000"), 400, -1128)
	expectErr(t, get("/v1/allOrders", "login", "1001", "startTime", "0", "endTime", strconv.Itoa(8*86_400_000)), 400, -1127)
	expectErr(t, get("/v1/userTrades", "login", "1001", "fromId", "x"), 400, -1130)
	expectErr(t, get("/v1/userTrades", "login", "1001", "symbol", "NOPE"), 400, -1121)
	expectErr(t, get("/v1/positions", "login", "1001", "symbol", "NOPE"), 400, -1121)
	for _, path := range []string{"/v1/openOrders", "/v1/allOrders", "/v1/positions", "/v1/userTrades"} {
		r := get(path, "login", "1001")
		expectOK(t, r)
		if string(r.Body) != "[]" {
			t.Errorf("%s: %s, want []", path, r.Body)
		}
	}
	// fromId lifts the window rules entirely.
	expectOK(t, get("/v1/userTrades", "login", "1001", "fromId", "1", "startTime", "0"))
	// The read-only key may read.
	ro := *c
	ro.APIKey = gwtest.ReadOnlyKey
	expectOK(t, must(t)(ro.Signed(bg, "GET", "/v1/openOrders", vals("login", "1001"), gwclient.InQuery)))
}

func TestHistoryReadsWeighFive(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	weight := func(path string) int {
		r := must(t)(c.Signed(bg, "GET", path, vals("login", "1001"), gwclient.InQuery))
		expectOK(t, r)
		n, err := strconv.Atoi(r.Header.Get("X-SVC-USED-WEIGHT-1M"))
		if err != nil {
			t.Fatalf("%s: weight header %q", path, r.Header.Get("X-SVC-USED-WEIGHT-1M"))
		}
		return n
	}
	prev := weight("/v1/positions")
	for path, want := range map[string]int{"/v1/allOrders": 5, "/v1/userTrades": 5, "/v1/openOrders": 1, "/v1/positions": 1} {
		got := weight(path)
		if got-prev != want {
			t.Errorf("%s weighs %d, want %d", path, got-prev, want)
		}
		prev = got
	}
}

// Every account-scoped read answers -2022 for a login that is in the key's scope but has no
// active account (nonexistent, archived or inactive), as for one outside the scope: never an
// empty list or -2013 (issue 17, item 4). A read the account store cannot answer is not a
// -2022 either: it is the service's fault (-1001 or -1000), never "not yours".
func TestAccountScopedReadsAnswer2022WithoutAnActiveAccount(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	get := func(path string, kv ...string) *gwclient.Response {
		return must(t)(c.Signed(bg, "GET", path, vals(kv...), gwclient.InQuery))
	}
	reads := [][]string{
		{"/v1/order", "orderId", "5"}, {"/v1/order", "origClientOrderId", "abc"}, {"/v1/openOrders"},
		{"/v1/allOrders"}, {"/v1/positions"}, {"/v1/userTrades"}, {"/v1/account"},
	}
	for _, login := range []int64{gwtest.LoginMissing, 2001} { // in scope without an account; out of scope
		for _, rd := range reads {
			expectErr(t, get(rd[0], append([]string{"login", strconv.FormatInt(login, 10)}, rd[1:]...)...), 400, -2022)
		}
	}
	// The same login answers once its account is active, and -2022 again once it is archived.
	for _, rd := range reads[2:] {
		expectOK(t, get(rd[0], "login", strconv.FormatInt(gwtest.LoginReal, 10)))
	}
	e.Accounts.Remove(gwtest.LoginReal)
	for _, rd := range reads {
		expectErr(t, get(rd[0], append([]string{"login", strconv.FormatInt(gwtest.LoginReal, 10)}, rd[1:]...)...), 400, -2022)
	}
	e.Accounts.Fail(errors.New("postgres down"))
	r := get("/v1/positions", "login", strconv.FormatInt(gwtest.LoginDemo, 10))
	if r.Status < 500 {
		t.Fatalf("account store failure answered %d: %s", r.Status, r.Body)
	}
}
