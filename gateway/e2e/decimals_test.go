package e2e_test

import (
	"encoding/json"
	"net/url"
	"testing"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/gateway/gwclient"
)

// testDecimals: every decimal is a JSON string; prices carry exactly the symbol's digits,
// money 4 places, marginLevel 2; integers are JSON numbers.
func testDecimals(t *testing.T, e *env) {
	c := e.client(e.main)
	one := func(sym string) url.Values { return url.Values{"symbol": {sym}} }
	priceTicker := func(t *testing.T, f map[string]json.RawMessage) {
		t.Helper()
		var sym string
		_ = json.Unmarshal(f["symbol"], &sym)
		d, ok := e.digits[sym]
		if !ok {
			t.Fatalf("ticker for unlisted symbol %q", sym)
		}
		for _, k := range []string{"bid", "ask", "last"} {
			wantDecimal(t, sym+"."+k, f[k], d)
		}
		wantInt(t, sym+".time", f["time"])
	}
	t.Run("ticker/price", func(t *testing.T) {
		for _, sym := range quotedSymbols {
			res := get(t, c, "/v1/ticker/price", one(sym))
			wantOK(t, res)
			priceTicker(t, fields(t, res.Body))
		}
		res := get(t, c, "/v1/ticker/price", nil)
		wantOK(t, res)
		var all []map[string]json.RawMessage
		decode(t, res, &all)
		if len(all) < len(quotedSymbols) {
			t.Errorf("all tickers: %d, want at least %d", len(all), len(quotedSymbols))
		}
		for _, f := range all {
			priceTicker(t, f)
		}
	})
	t.Run("bookTicker quantities are the string zero", func(t *testing.T) {
		for _, sym := range quotedSymbols {
			res := get(t, c, "/v1/ticker/bookTicker", one(sym))
			wantOK(t, res)
			f := fields(t, res.Body)
			wantDecimal(t, "bidPrice", f["bidPrice"], e.digits[sym])
			wantDecimal(t, "askPrice", f["askPrice"], e.digits[sym])
			if string(f["bidQty"]) != `"0"` || string(f["askQty"]) != `"0"` {
				t.Errorf("%s quantities %s / %s, want \"0\"", sym, f["bidQty"], f["askQty"])
			}
			wantInt(t, "time", f["time"])
		}
	})
	t.Run("24hr", func(t *testing.T) {
		for _, sym := range quotedSymbols {
			res := get(t, c, "/v1/ticker/24hr", one(sym))
			wantOK(t, res)
			f := fields(t, res.Body)
			d := e.digits[sym]
			for _, k := range []string{"openPrice", "highPrice", "lowPrice", "lastPrice", "bidPrice", "askPrice",
				"bidHigh", "bidLow", "askHigh", "askLow", "priceChange"} {
				wantDecimal(t, sym+"."+k, f[k], d)
			}
			wantDecimal(t, sym+".priceChangePercent", f["priceChangePercent"], 2)
			wantDecimal(t, sym+".volatility", f["volatility"], 2)
			wantDecimal(t, sym+".volume", f["volume"], -1)
			for _, k := range []string{"tradeDeals", "buyOrders", "sellOrders", "time"} {
				wantInt(t, sym+"."+k, f[k])
			}
		}
	})
	t.Run("ticks", func(t *testing.T) {
		for _, sym := range quotedSymbols {
			res := get(t, c, "/v1/ticks", url.Values{"symbol": {sym}, "limit": {"5"}})
			wantOK(t, res)
			var ticks []map[string]json.RawMessage
			decode(t, res, &ticks)
			for _, f := range ticks {
				priceTicker(t, f)
				wantInt(t, "volume", f["volume"])
				for _, k := range []string{"bidDirection", "askDirection"} {
					if n := wantInt(t, k, f[k]); n < -1 || n > 1 {
						t.Errorf("%s = %d", k, n)
					}
				}
			}
		}
	})
	t.Run("klines rows", func(t *testing.T) {
		for _, sym := range quotedSymbols {
			res := get(t, c, "/v1/klines", url.Values{"symbol": {sym}, "interval": {"1m"}, "limit": {"10"}})
			wantOK(t, res)
			var rows [][]json.RawMessage
			decode(t, res, &rows)
			for _, r := range rows {
				checkKlineRow(t, r, e.digits[sym], 60_000)
			}
		}
	})
	t.Run("account money 4 places, marginLevel 0.00", func(t *testing.T) {
		for _, login := range []int64{loginReal1, loginDemo, loginCent, loginNoTrade} {
			res := signed(t, c, "/v1/account", url.Values{"login": {itoa(login)}}, gwclient.InQuery)
			wantOK(t, res)
			f := fields(t, res.Body)
			for _, k := range []string{"balance", "credit", "equity", "margin", "freeMargin", "profit"} {
				wantDecimal(t, k, f[k], 4)
			}
			if string(f["marginLevel"]) != `"0.00"` {
				t.Errorf("login %d marginLevel %s, want \"0.00\" with no position", login, f["marginLevel"])
			}
			for _, k := range []string{"login", "leverage", "updateTime"} {
				wantInt(t, k, f[k])
			}
		}
	})
	t.Run("exchangeInfo specification decimals", func(t *testing.T) {
		res := get(t, e.client(noKey), "/v1/exchangeInfo", nil)
		wantOK(t, res)
		var info struct {
			Symbols []map[string]json.RawMessage `json:"symbols"`
		}
		decode(t, res, &info)
		for _, f := range info.Symbols {
			for _, k := range []string{"tickSize", "tickValue", "contractSize", "volumeMin", "volumeMax", "volumeStep", "swapLong", "swapShort"} {
				wantDecimal(t, k, f[k], -1)
			}
			for _, k := range []string{"digits", "stopsLevel", "freezeLevel"} {
				wantInt(t, k, f[k])
			}
		}
	})
}

// checkKlineRow checks [openTime, o, h, l, c, count, closeTime, 0]: prices at digits,
// open aligned to the epoch, close = open + interval - 1, low <= open/close <= high.
func checkKlineRow(t testing.TB, r []json.RawMessage, digits int, ivMs int64) (open, count int64) {
	t.Helper()
	if len(r) < 8 {
		t.Fatalf("kline row %s has %d elements, want 8", r, len(r))
	}
	open = wantInt(t, "openTime", r[0])
	if open%ivMs != 0 {
		t.Errorf("openTime %d not aligned to %d ms", open, ivMs)
	}
	var ohlc [4]apd.Decimal
	for i := 1; i <= 4; i++ {
		d, err := dec.Parse(wantDecimal(t, "ohlc", r[i], digits))
		if err != nil {
			t.Errorf("row %s: %v", r, err)
		}
		ohlc[i-1] = d
	}
	o, h, l, c := ohlc[0], ohlc[1], ohlc[2], ohlc[3]
	if dec.Cmp(l, o) > 0 || dec.Cmp(l, c) > 0 || dec.Cmp(h, o) < 0 || dec.Cmp(h, c) < 0 {
		t.Errorf("row %s: low/high do not bound open/close", r)
	}
	count = wantInt(t, "count", r[5])
	if count < 1 {
		t.Errorf("count %d, want >= 1", count)
	}
	if cl := wantInt(t, "closeTime", r[6]); cl != open+ivMs-1 {
		t.Errorf("closeTime %d, want %d", cl, open+ivMs-1)
	}
	if string(r[7]) != "0" {
		t.Errorf("row[7] = %s, want 0", r[7])
	}
	return open, count
}
