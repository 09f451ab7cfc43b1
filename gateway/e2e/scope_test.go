package e2e_test

import (
	"context"
	"net/http"
	"net/url"
	"reflect"
	"testing"
	"time"
	"tradesvc/cmd/tradesvc/app/apptest"

	"tradesvc/gateway/gwclient"
)

// testScope: the mandatory login of account-scoped reads and the key's login scope.
func testScope(t *testing.T, e *env) {
	c := e.client(e.main)
	account := func(t *testing.T, c *gwclient.Client, login string) *gwclient.Response {
		t.Helper()
		return signed(t, c, "/v1/account", url.Values{"login": {login}}, gwclient.InQuery)
	}
	t.Run("missing login is 400 -1102", func(t *testing.T) {
		wantErr(t, signed(t, c, "/v1/account", nil, gwclient.InQuery), http.StatusBadRequest, -1102)
		wantErr(t, account(t, c, ""), http.StatusBadRequest, -1102)
	})
	t.Run("non-int64 login is 400 -1122", func(t *testing.T) {
		for _, l := range []string{"abc", "1001.0", "9223372036854775808", "1e3"} {
			wantErr(t, account(t, c, l), http.StatusBadRequest, -1122)
		}
	})
	t.Run("login outside the key is 400 -2022", func(t *testing.T) {
		wantErr(t, account(t, c, itoa(loginFIFO)), http.StatusBadRequest, -2022) // exists, not in the key
		wantErr(t, account(t, c, "-1"), http.StatusBadRequest, -2022)
	})
	t.Run("nonexistent login in scope is 400 -2022", func(t *testing.T) {
		wantErr(t, account(t, c, itoa(loginMissing)), http.StatusBadRequest, -2022)
	})
	t.Run("every account-scoped read answers -2022 for a nonexistent or inactive login in scope", func(t *testing.T) {
		// Issue 17, item 4: an empty list or -2013 here would make a bot conclude that the
		// account is flat. 9998 stands for an archived account: its row is in the read model,
		// inactive (the trade server's seed has no such account, so nothing overwrites it).
		const loginInactive = 9998
		if _, err := e.svc.PG.Exec(context.Background(), `INSERT INTO rm.accounts (login, grp, currency, leverage, demo,
			trade_allowed, active, balance, credit, equity, margin, free_margin, profit, margin_level, update_time)
			VALUES ($1, 'real\usd', 'USD', 100, false, true, false, 0, 0, 0, 0, 0, 0, 0, 0)`, loginInactive); err != nil {
			t.Fatal(err)
		}
		k := e.client(e.svc.CreateKey(t, []int64{loginReal1, loginMissing, loginInactive}, true, nil))
		reads := []struct {
			path  string
			extra url.Values
		}{
			{"/v1/account", nil}, {"/v1/positions", nil}, {"/v1/openOrders", nil}, {"/v1/allOrders", nil},
			{"/v1/userTrades", nil}, {"/v1/order", url.Values{"orderId": {"1"}}},
			{"/v1/order", url.Values{"origClientOrderId": {"no-such-order"}}},
		}
		for _, login := range []int64{loginMissing, loginInactive, loginFIFO} { // nonexistent, inactive, out of scope
			for _, rd := range reads {
				q := url.Values{"login": {itoa(login)}}
				for n, v := range rd.extra {
					q[n] = v
				}
				res := signed(t, k, rd.path, q, gwclient.InQuery)
				if res.Status != http.StatusBadRequest {
					t.Errorf("login %d %s: %d %s, want -2022", login, rd.path, res.Status, res.Body)
					continue
				}
				wantErr(t, res, http.StatusBadRequest, -2022)
			}
		}
		// The same key reads its active login.
		for _, rd := range reads[:5] {
			wantOK(t, signed(t, k, rd.path, url.Values{"login": {itoa(loginReal1)}}, gwclient.InQuery))
		}
	})
	t.Run("keys sharing a login both read it", func(t *testing.T) {
		k1 := e.client(e.svc.CreateKey(t, []int64{loginReal1, loginReal2}, false, nil))
		k2 := e.client(e.svc.CreateKey(t, []int64{loginReal1}, true, nil))
		k3 := e.client(e.svc.CreateKey(t, []int64{loginReal2}, false, nil))
		for _, k := range []*gwclient.Client{k1, k2} {
			res := account(t, k, "1001")
			wantOK(t, res)
			if l := wantInt(t, "login", fields(t, res.Body)["login"]); l != loginReal1 {
				t.Errorf("login %d, want 1001", l)
			}
		}
		wantErr(t, account(t, k3, "1001"), http.StatusBadRequest, -2022)
		wantOK(t, account(t, k3, "1002"))
	})
	type item struct {
		Login int64 `json:"login"`
		Demo  bool  `json:"demo"`
	}
	accounts := func(t *testing.T, c *gwclient.Client) []item {
		t.Helper()
		res := signed(t, c, "/v1/accounts", nil, gwclient.InQuery)
		wantOK(t, res)
		var got []item
		decode(t, res, &got)
		return got
	}
	t.Run("a scope change takes effect within seconds", func(t *testing.T) {
		k := e.svc.CreateKey(t, []int64{1001}, true, nil)
		kc := e.client(k)
		wantOK(t, account(t, kc, "1001"))
		e.svc.ScopeKey(t, k.APIKey, []int64{1002})
		start := time.Now()
		apptest.Eventually(t, 5*time.Second, "the new scope at the gateway", func() bool {
			return account(t, kc, "1001").Status == http.StatusBadRequest
		})
		t.Logf("scope change seen after %v", time.Since(start).Round(10*time.Millisecond))
		wantErr(t, account(t, kc, "1001"), http.StatusBadRequest, -2022)
		wantOK(t, account(t, kc, "1002"))
	})
	t.Run("accounts lists exactly the key's existing logins", func(t *testing.T) {
		want := []item{{1001, false}, {1002, false}, {1003, true}, {1004, false}, {1005, false}}
		if got := accounts(t, c); !reflect.DeepEqual(got, want) {
			t.Errorf("accounts %+v, want %+v (9999 absent, demo only for 1003)", got, want)
		}
		one := e.client(e.svc.CreateKey(t, []int64{loginDemo, loginMissing}, false, nil))
		if got := accounts(t, one); !reflect.DeepEqual(got, []item{{1003, true}}) {
			t.Errorf("accounts %+v, want [{1003 true}]", got)
		}
		none := e.client(e.svc.CreateKey(t, []int64{loginMissing}, false, nil))
		if got := accounts(t, none); got == nil || len(got) != 0 {
			t.Errorf("accounts %+v, want []", got)
		}
	})
	t.Run("trading-disabled account is readable with tradeAllowed false", func(t *testing.T) {
		for login, want := range map[int64]bool{loginNoTrade: false, loginReal1: true, loginDemo: true} {
			res := account(t, c, itoa(login))
			wantOK(t, res)
			var a struct {
				Login        int64 `json:"login"`
				TradeAllowed *bool `json:"tradeAllowed"`
			}
			decode(t, res, &a)
			if a.Login != login || a.TradeAllowed == nil || *a.TradeAllowed != want {
				t.Errorf("login %d: %s, want tradeAllowed %v", login, res.Body, want)
			}
		}
	})
	t.Run("account record of the cent account", func(t *testing.T) {
		res := account(t, c, itoa(loginCent))
		wantOK(t, res)
		var a struct {
			Currency string `json:"currency"`
			Balance  string `json:"balance"`
			Group    string `json:"group"`
			Leverage int    `json:"leverage"`
		}
		decode(t, res, &a)
		if a.Currency != "USC" || a.Balance != "1000000.0000" || a.Group != `real\cent-usc` || a.Leverage != 100 {
			t.Errorf("cent account %s", res.Body)
		}
	})
}
