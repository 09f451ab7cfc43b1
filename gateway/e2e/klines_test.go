package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/infra/clickhouse"
)

// kline is a decoded kline row.
type kline struct {
	open, close int64
	o, h, l, c  string
	count       int64
}

// testKlines: candles come from the ClickHouse 1-minute bars the projection writes from the
// tick stream: rows equal the bars_1m rows, buckets align to the epoch, and 5m / 1h candles
// are the fold of their 1m candles (counts sum, open first, close last, high max, low min).
func testKlines(t *testing.T, e *env) {
	c := e.client(e.unlimitedKey(t)) // the waits below poll many times a second
	const sym = "BTCUSD"
	digits := e.digits[sym]
	fetch := func(t *testing.T, iv string, ivMs int64, v url.Values) []kline {
		t.Helper()
		v.Set("symbol", sym)
		v.Set("interval", iv)
		res := get(t, c, "/v1/klines", v)
		wantOK(t, res)
		var rows [][]json.RawMessage
		decode(t, res, &rows)
		out := make([]kline, 0, len(rows))
		for i, r := range rows {
			open, count := checkKlineRow(t, r, digits, ivMs)
			k := kline{open: open, close: open + ivMs - 1, count: count}
			for j, dst := range []*string{&k.o, &k.h, &k.l, &k.c} {
				_ = json.Unmarshal(r[j+1], dst)
			}
			if i > 0 && open <= out[i-1].open {
				t.Fatalf("%s rows not oldest first: %d after %d", iv, open, out[i-1].open)
			}
			out = append(out, k)
		}
		return out
	}
	t.Run("bars appear", func(t *testing.T) {
		apptest.Eventually(t, 30*time.Second, "a 1m bar of BTCUSD", func() bool {
			return len(fetch(t, "1m", 60_000, url.Values{})) > 0
		})
		// Folding is only worth checking over more than one bar: wait for the service to
		// cross a minute boundary (at most a minute; the other groups run meanwhile).
		apptest.Eventually(t, 75*time.Second, "two 1m bars of BTCUSD", func() bool {
			return len(fetch(t, "1m", 60_000, url.Values{})) >= 2
		})
	})
	t.Run("1m rows are the ClickHouse bars", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ch, err := clickhouse.Open(ctx, clickhouse.Config{Addr: e.svc.Config.CHAddr, Database: e.svc.Config.CHDatabase})
		if err != nil {
			t.Fatal(err)
		}
		defer ch.Close()
		var last string
		// Ticks keep landing in the current bar, so compare snapshots until two reads agree.
		apptest.Eventually(t, 20*time.Second, "klines equal to bars_1m", func() bool {
			rows, err := ch.Query(ctx, `SELECT open_time, toString(ticks) FROM bars_1m FINAL WHERE symbol = ? ORDER BY open_time`, sym)
			if err != nil {
				t.Fatalf("query bars_1m: %v", err)
			}
			var bars []string
			for rows.Next() {
				var open int64
				var n string
				if err := rows.Scan(&open, &n); err != nil {
					t.Fatalf("scan bars_1m: %v", err)
				}
				bars = append(bars, fmt.Sprintf("%d/%s", open, n))
			}
			rows.Close()
			var api []string
			for _, k := range fetch(t, "1m", 60_000, url.Values{"limit": {"1000"}}) {
				api = append(api, fmt.Sprintf("%d/%d", k.open, k.count))
			}
			last = fmt.Sprintf("bars_1m %v, klines %v", bars, api)
			return len(bars) > 0 && fmt.Sprint(bars) == fmt.Sprint(api)
		})
		t.Log(last)
	})
	for _, agg := range []struct {
		iv   string
		ivMs int64
	}{{"5m", 300_000}, {"15m", 900_000}, {"1h", 3_600_000}, {"1d", 86_400_000}} {
		t.Run(agg.iv+" is the fold of 1m", func(t *testing.T) {
			eventuallyNoMismatch(t, 20*time.Second, agg.iv+" consistent with 1m", func() string {
				big := fetch(t, agg.iv, agg.ivMs, url.Values{"limit": {"10"}})
				if len(big) == 0 {
					return "no " + agg.iv + " rows"
				}
				// With startTime alone a request covers the 1,000 minutes from it (query.klineWindow):
				// a day's bucket needs up to two pages of 1m rows.
				var small []kline
				for from := big[0].open; from <= time.Now().UnixMilli(); from += 1000 * 60_000 {
					small = append(small, fetch(t, "1m", 60_000, url.Values{"startTime": {itoa(from)}, "limit": {"1000"}})...)
				}
				return foldMismatch(big, small, agg.ivMs)
			})
		})
	}
}

// foldMismatch describes how big differs from small folded into buckets of ivMs ("" if not).
func foldMismatch(big, small []kline, ivMs int64) string {
	i := 0
	for _, b := range big {
		var sum int64
		var first, last *kline
		high, low := "", ""
		for ; i < len(small) && small[i].open < b.open+ivMs; i++ {
			s := &small[i]
			if s.open < b.open {
				return fmt.Sprintf("1m row %d before bucket %d", s.open, b.open)
			}
			if first == nil {
				first, high, low = s, s.h, s.l
			}
			last = s
			sum += s.count
			if cmpDec(s.h, high) > 0 {
				high = s.h
			}
			if cmpDec(s.l, low) < 0 {
				low = s.l
			}
		}
		if first == nil {
			return fmt.Sprintf("bucket %d has no 1m rows", b.open)
		}
		if sum != b.count || first.o != b.o || last.c != b.c || high != b.h || low != b.l {
			return fmt.Sprintf("bucket %d: %+v, folded 1m: count %d o %s h %s l %s c %s", b.open, b, sum, first.o, high, low, last.c)
		}
	}
	if i != len(small) {
		return fmt.Sprintf("%d 1m rows beyond the last bucket", len(small)-i)
	}
	return ""
}
