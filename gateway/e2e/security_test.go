package e2e_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/gateway/gwclient"
)

// testSecurity: the security types, key header and key refusals, and the signed-request
// checks of USER_DATA.
func testSecurity(t *testing.T, e *env) {
	sym := url.Values{"symbol": {"BTCUSD"}}
	acct := url.Values{"login": {"1001"}}
	t.Run("NONE without key has no usage headers", func(t *testing.T) {
		for _, p := range []string{"/v1/ping", "/v1/time", "/v1/exchangeInfo"} {
			res := get(t, e.client(noKey), p, nil)
			wantOK(t, res)
			noUsageHeaders(t, res)
		}
	})
	t.Run("NONE with key carries usage headers", func(t *testing.T) {
		res := get(t, e.client(e.svc.CreateKey(t, []int64{1001}, false, nil)), "/v1/ping", nil)
		wantOK(t, res)
		if w := usedWeight(t, res); w != 1 {
			t.Errorf("used weight %d after one ping, want 1", w)
		}
	})
	t.Run("MARKET_DATA without key is 401 -1002", func(t *testing.T) {
		for _, p := range []string{"/v1/ticker/price", "/v1/ticker/bookTicker", "/v1/ticker/24hr", "/v1/klines", "/v1/ticks"} {
			res := get(t, e.client(noKey), p, sym)
			wantErr(t, res, http.StatusUnauthorized, -1002)
			noUsageHeaders(t, res)
		}
	})
	t.Run("USER_DATA without key is 401 -1002", func(t *testing.T) {
		res := signed(t, e.client(apptest.Key{Secret: e.main.Secret}), "/v1/account", acct, gwclient.InQuery)
		wantErr(t, res, http.StatusUnauthorized, -1002)
	})
	t.Run("malformed key header is 401 -1002", func(t *testing.T) {
		for _, bad := range []string{"has space", strings.Repeat("k", 257), "tab\tkey", "ключ"} {
			res := get(t, e.client(apptest.Key{APIKey: bad}), "/v1/ticker/price", sym)
			wantErr(t, res, http.StatusUnauthorized, -1002)
			noUsageHeaders(t, res)
		}
	})
	t.Run("unknown key is 401 -2015", func(t *testing.T) {
		unknown := apptest.Key{APIKey: strings.Repeat("Z", 64), Secret: []byte("s")}
		res := get(t, e.client(unknown), "/v1/ticker/price", sym)
		wantErr(t, res, http.StatusUnauthorized, -2015)
		noUsageHeaders(t, res)
		wantErr(t, signed(t, e.client(unknown), "/v1/account", acct, gwclient.InQuery), http.StatusUnauthorized, -2015)
		// A key header on a NONE endpoint is validated too.
		wantErr(t, get(t, e.client(unknown), "/v1/ping", nil), http.StatusUnauthorized, -2015)
	})
	t.Run("revoked key is -2015 within seconds", func(t *testing.T) {
		k := e.svc.CreateKey(t, []int64{1001}, false, nil)
		c := e.client(k)
		wantOK(t, get(t, c, "/v1/ticker/price", sym))
		wantOK(t, signed(t, c, "/v1/account", acct, gwclient.InQuery))
		e.svc.RevokeKey(t, k.APIKey)
		start := time.Now()
		apptest.Eventually(t, 5*time.Second, "revocation to apply", func() bool {
			return get(t, c, "/v1/ticker/price", sym).Status == http.StatusUnauthorized
		})
		t.Logf("revocation applied after %v", time.Since(start).Round(time.Millisecond))
		wantErr(t, get(t, c, "/v1/ticker/price", sym), http.StatusUnauthorized, -2015)
		wantErr(t, signed(t, c, "/v1/account", acct, gwclient.InQuery), http.StatusUnauthorized, -2015)
		wantErr(t, get(t, c, "/v1/ping", nil), http.StatusUnauthorized, -2015)
	})
	t.Run("allowlist excluding 127.0.0.1 is -2015", func(t *testing.T) {
		out := e.client(e.svc.CreateKey(t, []int64{1001}, false, []string{"10.0.0.0/8", "192.0.2.7"}))
		wantErr(t, get(t, out, "/v1/ticker/price", sym), http.StatusUnauthorized, -2015)
		wantErr(t, signed(t, out, "/v1/account", acct, gwclient.InQuery), http.StatusUnauthorized, -2015)
		in := e.client(e.svc.CreateKey(t, []int64{1001}, false, []string{"10.0.0.0/8", "127.0.0.0/8"}))
		wantOK(t, get(t, in, "/v1/ticker/price", sym))
		wantOK(t, signed(t, in, "/v1/account", acct, gwclient.InQuery))
	})
	t.Run("read-only key reads USER_DATA", func(t *testing.T) {
		ro := e.client(e.svc.CreateKey(t, []int64{1001}, true, nil))
		wantOK(t, signed(t, ro, "/v1/account", acct, gwclient.InQuery))
	})

	c := e.client(e.main)
	send := func(t *testing.T, rawQuery string) *gwclient.Response {
		t.Helper()
		return raw(t, c, http.MethodGet, "/v1/account", rawQuery, "", true)
	}
	sign := func(q string) string { return q + "&signature=" + gwclient.Sign(e.main.Secret, q) }
	t.Run("missing timestamp is 400 -1102", func(t *testing.T) {
		wantErr(t, send(t, sign("login=1001")), http.StatusBadRequest, -1102)
		wantErr(t, send(t, sign("login=1001&timestamp=")), http.StatusBadRequest, -1102)
	})
	t.Run("non-integer timestamp is 400 -1130", func(t *testing.T) {
		for _, ts := range []string{"abc", "1.5e12", itoa(nowMs()) + ".0", "0x1"} {
			wantErr(t, send(t, sign("login=1001&timestamp="+url.QueryEscape(ts))), http.StatusBadRequest, -1130)
		}
	})
	t.Run("missing signature is 400 -1102", func(t *testing.T) {
		wantErr(t, send(t, "login=1001&timestamp="+itoa(nowMs())), http.StatusBadRequest, -1102)
	})
	t.Run("bad signature is 401 -1022", func(t *testing.T) {
		q := "login=1001&timestamp=" + itoa(nowMs())
		wantErr(t, send(t, q+"&signature="+gwclient.Sign([]byte("wrong secret"), q)), http.StatusUnauthorized, -1022)
		wantErr(t, send(t, q+"&signature=xyz"), http.StatusUnauthorized, -1022)
		// Signed by another key's secret.
		other := e.svc.CreateKey(t, []int64{1001}, false, nil)
		wantErr(t, send(t, q+"&signature="+gwclient.Sign(other.Secret, q)), http.StatusUnauthorized, -1022)
		// Refused requests carry usage headers but are not charged.
		res := send(t, q+"&signature="+gwclient.Sign([]byte("wrong secret"), q))
		w0 := usedWeight(t, res)
		if w1 := usedWeight(t, send(t, q+"&signature=00")); w1 != w0 {
			t.Errorf("weight moved from %d to %d on an unauthenticated request", w0, w1)
		}
	})
	t.Run("timestamp too old is 400 -1021", func(t *testing.T) {
		wantErr(t, send(t, sign("login=1001&timestamp="+itoa(nowMs()-6000))), http.StatusBadRequest, -1021)
		wantErr(t, send(t, sign("login=1001&recvWindow=1000&timestamp="+itoa(nowMs()-2500))), http.StatusBadRequest, -1021)
		// Within an explicit recvWindow it passes.
		wantOK(t, send(t, sign("login=1001&recvWindow=60000&timestamp="+itoa(nowMs()-30000))))
		wantOK(t, send(t, sign("login=1001&timestamp="+itoa(nowMs()-3000))))
	})
	t.Run("timestamp too far ahead is 400 -1021", func(t *testing.T) {
		wantErr(t, send(t, sign("login=1001&timestamp="+itoa(nowMs()+5000))), http.StatusBadRequest, -1021)
		wantErr(t, send(t, sign("login=1001&recvWindow=60000&timestamp="+itoa(nowMs()+10000))), http.StatusBadRequest, -1021)
		wantOK(t, send(t, sign("login=1001&timestamp="+itoa(nowMs()+500)))) // lead tolerance < 1000 ms
	})
	t.Run("recvWindow outside 1..60000 is 400 -1130", func(t *testing.T) {
		for _, w := range []string{"0", "60001", "-5", "abc", "5000.5"} {
			wantErr(t, send(t, sign("login=1001&recvWindow="+w+"&timestamp="+itoa(nowMs()))), http.StatusBadRequest, -1130)
		}
		wantOK(t, send(t, sign("login=1001&recvWindow=1&timestamp="+itoa(nowMs()+800))))
	})
}
