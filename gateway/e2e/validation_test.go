package e2e_test

import (
	"net/http"
	"net/url"
	"testing"
)

// testValidation: symbol case, intervals, limits, time windows, ticks, exchangeInfo filters.
func testValidation(t *testing.T, e *env) {
	c := e.client(e.main)
	t.Run("symbol differing in case is 400 -1121", func(t *testing.T) {
		for _, p := range []string{"/v1/ticker/price", "/v1/ticker/bookTicker", "/v1/ticker/24hr", "/v1/ticks"} {
			for _, s := range []string{"btcusd", "BTCUSd", "BTCUSDX", " BTCUSD"} {
				wantErr(t, get(t, c, p, url.Values{"symbol": {s}}), http.StatusBadRequest, -1121)
			}
		}
		wantErr(t, get(t, c, "/v1/klines", url.Values{"symbol": {"btcusd"}, "interval": {"1m"}}), http.StatusBadRequest, -1121)
		wantErr(t, get(t, e.client(noKey), "/v1/exchangeInfo", url.Values{"symbol": {"btcusd"}}), http.StatusBadRequest, -1121)
		wantErr(t, get(t, e.client(noKey), "/v1/exchangeInfo", url.Values{"symbols": {`["BTCUSD","ethusd"]`}}), http.StatusBadRequest, -1121)
	})
	kl := func(kv ...string) url.Values {
		v := url.Values{"symbol": {"BTCUSD"}, "interval": {"1m"}}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				v.Del(kv[i])
			} else {
				v.Set(kv[i], kv[i+1])
			}
		}
		return v
	}
	t.Run("bad interval is 400 -1120", func(t *testing.T) {
		for _, iv := range []string{"1w", "1M", "3m", "1H", "60s", "m1"} {
			wantErr(t, get(t, c, "/v1/klines", kl("interval", iv)), http.StatusBadRequest, -1120)
		}
		for _, iv := range []string{"1m", "5m", "15m", "30m", "1h", "2h", "4h", "1d"} {
			wantOK(t, get(t, c, "/v1/klines", kl("interval", iv)))
		}
	})
	t.Run("klines mandatory parameters are -1102", func(t *testing.T) {
		wantErr(t, get(t, c, "/v1/klines", kl("symbol", "")), http.StatusBadRequest, -1102)
		wantErr(t, get(t, c, "/v1/klines", kl("interval", "")), http.StatusBadRequest, -1102)
	})
	t.Run("klines limit outside 1..1000 is 400 -1130", func(t *testing.T) {
		for _, l := range []string{"0", "1001", "-1", "abc", "10.5"} {
			wantErr(t, get(t, c, "/v1/klines", kl("limit", l)), http.StatusBadRequest, -1130)
		}
		for _, l := range []string{"1", "1000"} {
			wantOK(t, get(t, c, "/v1/klines", kl("limit", l)))
		}
		wantErr(t, get(t, c, "/v1/klines", kl("startTime", "yesterday")), http.StatusBadRequest, -1130)
	})
	t.Run("klines endTime before startTime is 400 -1128", func(t *testing.T) {
		now := nowMs()
		wantErr(t, get(t, c, "/v1/klines", kl("startTime", itoa(now), "endTime", itoa(now-1))), http.StatusBadRequest, -1128)
		res := get(t, c, "/v1/klines", kl("startTime", itoa(now), "endTime", itoa(now)))
		wantOK(t, res) // equal is a valid (possibly empty) window
	})
	t.Run("ticks limit rules", func(t *testing.T) {
		for _, l := range []string{"0", "1001", "-3", "x"} {
			wantErr(t, get(t, c, "/v1/ticks", url.Values{"symbol": {"BTCUSD"}, "limit": {l}}), http.StatusBadRequest, -1130)
		}
		wantErr(t, get(t, c, "/v1/ticks", nil), http.StatusBadRequest, -1102)
		type tick struct {
			Symbol string `json:"symbol"`
			Time   int64  `json:"time"`
		}
		var ticks []tick
		res := get(t, c, "/v1/ticks", url.Values{"symbol": {"BTCUSD"}, "limit": {"3"}})
		wantOK(t, res)
		decode(t, res, &ticks)
		if len(ticks) < 1 || len(ticks) > 3 {
			t.Fatalf("limit 3 gave %d ticks", len(ticks))
		}
		res = get(t, c, "/v1/ticks", url.Values{"symbol": {"BTCUSD"}, "limit": {"1000"}})
		wantOK(t, res)
		decode(t, res, &ticks)
		for i, tk := range ticks {
			if tk.Symbol != "BTCUSD" || (i > 0 && tk.Time < ticks[i-1].Time) {
				t.Fatalf("tick %d %+v: wrong symbol or not oldest first", i, tk)
			}
		}
		res = get(t, c, "/v1/ticks", url.Values{"symbol": {"BTCUSD"}})
		wantOK(t, res)
		decode(t, res, &ticks)
		if len(ticks) < 1 || len(ticks) > 100 {
			t.Errorf("default limit gave %d ticks, want 1..100", len(ticks))
		}
	})
	type info struct {
		Symbols []struct {
			Symbol string `json:"symbol"`
		} `json:"symbols"`
	}
	names := func(t *testing.T, v url.Values) []string {
		t.Helper()
		res := get(t, e.client(noKey), "/v1/exchangeInfo", v)
		wantOK(t, res)
		var in info
		decode(t, res, &in)
		var out []string
		for _, s := range in.Symbols {
			out = append(out, s.Symbol)
		}
		return out
	}
	t.Run("exchangeInfo symbol and symbols", func(t *testing.T) {
		if got := names(t, url.Values{"symbol": {"ETHUSD"}}); len(got) != 1 || got[0] != "ETHUSD" {
			t.Errorf("symbol=ETHUSD listed %v", got)
		}
		got := names(t, url.Values{"symbols": {`["BTCUSD","ETHUSD"]`}})
		if len(got) != 2 || !(got[0] == "BTCUSD" && got[1] == "ETHUSD" || got[0] == "ETHUSD" && got[1] == "BTCUSD") {
			t.Errorf(`symbols=["BTCUSD","ETHUSD"] listed %v`, got)
		}
		if all := names(t, nil); len(all) != len(e.digits) || len(all) < 10 {
			t.Errorf("unfiltered exchangeInfo listed %d symbols, want all %d", len(all), len(e.digits))
		}
		wantErr(t, get(t, e.client(noKey), "/v1/exchangeInfo", url.Values{"symbol": {"BTCUSD"}, "symbols": {`["ETHUSD"]`}}), http.StatusBadRequest, -1128)
		for _, bad := range []string{"BTCUSD", `["BTCUSD"`, `[]`, `{"a":1}`, `[1,2]`} {
			wantErr(t, get(t, e.client(noKey), "/v1/exchangeInfo", url.Values{"symbols": {bad}}), http.StatusBadRequest, -1130)
		}
	})
}
