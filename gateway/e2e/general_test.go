package e2e_test

import (
	"tradesvc/gateway/gwclient"

	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testGeneral: ping, time, JSON on every answer including routing errors, retired
// endpoints, oversized bodies and parameter-level refusals, plain HTTP refused.
func testGeneral(t *testing.T, e *env) {
	anon := e.client(noKey)
	t.Run("ping returns {} without usage headers", func(t *testing.T) {
		res := get(t, anon, "/v1/ping", nil)
		wantOK(t, res)
		if string(res.Body) != "{}" {
			t.Errorf("body %q, want {}", res.Body)
		}
		noUsageHeaders(t, res)
	})
	t.Run("time is the server clock", func(t *testing.T) {
		before := nowMs()
		res := get(t, anon, "/v1/time", nil)
		after := nowMs()
		wantOK(t, res)
		f := fields(t, res.Body)
		if len(f) != 1 {
			t.Errorf("fields %s, want only serverTime", res.Body)
		}
		st := wantInt(t, "serverTime", f["serverTime"])
		if st < before || st > after { // same machine, same clock
			t.Errorf("serverTime %d outside [%d, %d]", st, before, after)
		}
		noUsageHeaders(t, res)
	})
	t.Run("unknown path is 404 -1020", func(t *testing.T) {
		wantErr(t, get(t, anon, "/v1/nope", nil), http.StatusNotFound, -1020)
		wantErr(t, get(t, anon, "/v2/ping", nil), http.StatusNotFound, -1020)
		wantErr(t, get(t, anon, "/v1/PING", nil), http.StatusNotFound, -1020) // paths are case-sensitive
		wantErr(t, get(t, e.client(e.main), "/", nil), http.StatusNotFound, -1020)
	})
	t.Run("unknown method is 405 -1020", func(t *testing.T) {
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
			wantErr(t, raw(t, anon, m, "/v1/ping", "", "", false), http.StatusMethodNotAllowed, -1020)
		}
		wantErr(t, raw(t, anon, http.MethodPost, "/v1/ticker/price", "symbol=BTCUSD", "", false), http.StatusMethodNotAllowed, -1020)
	})
	t.Run("retired endpoints are 410 -1016 for any method", func(t *testing.T) {
		for _, p := range []string{"/v1/order/test", "/v1/positionSide/dual", "/v1/premiumIndex", "/v1/fundingRate", "/v1/leverage", "/v1/marginType"} {
			for _, m := range []string{http.MethodGet, http.MethodPost} {
				wantErr(t, raw(t, anon, m, p, "", "", false), http.StatusGone, -1016)
			}
		}
	})
	// Regression: keyed requests that never reached an endpoint (unknown path or method,
	// retired path, oversized body) came back without the usage headers.
	t.Run("keyed responses outside any endpoint carry usage headers", func(t *testing.T) {
		c := e.client(e.main)
		for _, res := range []*gwclient.Response{
			raw(t, c, http.MethodGet, "/v1/nope", "", "", true),
			raw(t, c, http.MethodPost, "/v1/ping", "", "", true),
			raw(t, c, http.MethodGet, "/v1/premiumIndex", "", "", true),
			oversized(t, e, e.main.APIKey),
		} {
			if res.Status < 400 {
				t.Fatalf("status %d, want an error", res.Status)
			}
			usedWeight(t, res)
		}
	})
	t.Run("body too large is 413 -1101", func(t *testing.T) {
		wantErr(t, oversized(t, e, ""), http.StatusRequestEntityTooLarge, -1101)
		// The service keeps answering afterwards.
		wantOK(t, get(t, anon, "/v1/ping", nil))
	})
	t.Run("parameter refusals", func(t *testing.T) {
		c := e.client(e.main)
		var many []string
		for i := 0; i < 33; i++ {
			many = append(many, "p"+itoa(int64(i))+"=1")
		}
		wantErr(t, raw(t, c, http.MethodGet, "/v1/ticker/price", strings.Join(many, "&"), "", true), http.StatusBadRequest, -1101)
		wantErr(t, raw(t, c, http.MethodGet, "/v1/ticker/price", "symbol=BTCUSD&symbol=ETHUSD", "", true), http.StatusBadRequest, -1101)
		wantErr(t, raw(t, c, http.MethodGet, "/v1/ticker/price", "symbol=BTC%ZZ", "", true), http.StatusBadRequest, -1100)
		wantErr(t, raw(t, c, http.MethodGet, "/v1/ticker/price", "symbol=BTC%09USD", "", true), http.StatusBadRequest, -1100)
	})
	t.Run("plain HTTP is 400 -1020", func(t *testing.T) {
		addr := strings.TrimPrefix(e.svc.BaseURL, "https://")
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(conn, "GET /v1/ping HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("read plain-HTTP answer: %v", err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("status %d, want 400: %s", res.StatusCode, b)
		}
		var env struct{ Code int }
		if json.Unmarshal(b, &env) != nil || env.Code != -1020 {
			t.Errorf("body %q, want code -1020", b)
		}
	})
}
