package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"tradesvc/events/dec"
)

// chRows runs sql on ClickHouse and returns its rows as text by column name: NULL for
// null, decimals exactly as stored, dates as YYYY-MM-DD, times as YYYY-MM-DD hh:mm:ss UTC.
func chRows(t *testing.T, conn driver.Conn, sql string) []map[string]string {
	t.Helper()
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		t.Fatalf("%s\n: %v", sql, err)
	}
	defer rows.Close()
	cols, types := rows.Columns(), rows.ColumnTypes()
	var out []map[string]string
	for rows.Next() {
		dests := make([]any, len(cols))
		for i, ct := range types {
			dests[i] = reflect.New(ct.ScanType()).Interface()
		}
		if err := rows.Scan(dests...); err != nil {
			t.Fatalf("scan %s: %v", sql, err)
		}
		m := make(map[string]string, len(cols))
		for i, c := range cols {
			m[c] = chText(reflect.ValueOf(dests[i]).Elem(), types[i].DatabaseTypeName())
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func chText(v reflect.Value, typ string) string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "NULL"
		}
		v = v.Elem()
	}
	switch x := v.Interface().(type) {
	case decimal.Decimal:
		return x.String()
	case time.Time:
		if strings.HasPrefix(typ, "Date") && !strings.HasPrefix(typ, "DateTime") || strings.Contains(typ, "(Date)") {
			return x.Format(time.DateOnly)
		}
		return x.UTC().Format(time.DateTime)
	}
	return fmt.Sprint(v.Interface())
}

// pgRows runs sql on the service's Postgres and returns its rows as text (every column
// must be text, or cast to it).
func pgRows(t *testing.T, x *analytics, sql string, args ...any) [][]string {
	t.Helper()
	rows, err := x.e.svc.PG.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]string, error) {
		vals, err := r.Values()
		if err != nil {
			return nil, err
		}
		s := make([]string, len(vals))
		for i, v := range vals {
			if v == nil {
				s[i] = "NULL"
			} else {
				s[i] = fmt.Sprint(v)
			}
		}
		return s, nil
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

// sameNum compares two decimal texts by value ("NULL" only equals "NULL").
func sameNum(a, b string) bool {
	if a == "NULL" || b == "NULL" || a == "" || b == "" {
		return a == b || (a == "" && b == "NULL") || (a == "NULL" && b == "")
	}
	x, err1 := dec.Parse(a)
	y, err2 := dec.Parse(b)
	return err1 == nil && err2 == nil && x.Cmp(&y) == 0
}

// checkRows waits until the ClickHouse tables caught up with the trading read model (every
// operation with the same status and executed volume, every deal and account), then holds
// each order's execution-quality row to what the API answered for it.
func (x *analytics) checkRows(t *testing.T) {
	ch := x.e.svc.ClickHouse(t)
	eventuallyNoMismatch(t, 60*time.Second, "the ClickHouse projections to catch up", func() string {
		want := map[string]string{}
		for _, r := range pgRows(t, x, `SELECT operation_id, status, coalesce(executed_volume, 0)::text FROM rm.operations
			WHERE kind IS NOT NULL AND kind <> 'CLOSE_ALL'`) {
			want[r[0]] = r[1] + " " + dec.String(dec.MustParse(r[2]))
		}
		got := map[string]string{}
		for _, r := range chRows(t, ch, `SELECT operation_id, status, toString(executed_volume) AS v
			FROM execution_quality FINAL WHERE recorded = 1 AND decided = 1`) {
			got[r["operation_id"]] = r["status"] + " " + dec.String(dec.Round(dec.MustParse(r["v"]), 8))
		}
		for id, w := range want {
			if g := got[id]; !sameStatusVolume(g, w) {
				return fmt.Sprintf("operation %s: %q in ClickHouse, %q in the read model", id, g, w)
			}
		}
		if len(got) != len(want) {
			return fmt.Sprintf("%d decided operations in ClickHouse, %d in the read model", len(got), len(want))
		}
		pgDeals := pgRows(t, x, `SELECT count(*)::text FROM rm.deals`)[0][0]
		chDeals := chRows(t, ch, `SELECT count() AS n FROM deals FINAL`)[0]["n"]
		if pgDeals != chDeals {
			return "deals: " + chDeals + " in ClickHouse, " + pgDeals + " in the read model"
		}
		pgAccounts := pgRows(t, x, `SELECT count(*)::text FROM rm.accounts`)[0][0]
		if n := chRows(t, ch, `SELECT count() AS n FROM accounts FINAL`)[0]["n"]; n != pgAccounts {
			return "accounts: " + n + " in ClickHouse, " + pgAccounts + " in the read model"
		}
		return ""
	})
	specs := x.tickSpecs(t)
	for _, o := range x.orders {
		if o.final == nil {
			continue
		}
		rows := chRows(t, ch, fmt.Sprintf(`SELECT status, ifNull(toString(code), 'NULL') AS code,
			ifNull(toString(mt5_retcode), 'NULL') AS retcode, ifNull(toString(order_id), 'NULL') AS order_id,
			toString(executed_volume) AS executed, ifNull(toString(fill_price), 'NULL') AS price,
			ifNull(toString(slippage_points), 'NULL') AS points, ifNull(toString(slippage), 'NULL') AS money, currency,
			received_ms, queued_ms, ifNull(sent_ms, 0) AS sent, ifNull(answered_ms, 0) AS answered,
			ifNull(first_deal_observed_ms, 0) AS observed, ifNull(latency_fill_ms, -1) AS fill_ms, deals
			FROM execution_quality FINAL WHERE recorded = 1 AND login = %d AND client_order_id = '%s'`, o.login, o.coid))
		if len(rows) != 1 {
			t.Errorf("%s: %d rows", o.coid, len(rows))
			continue
		}
		x.checkRow(t, o, rows[0], specs)
	}
}

// sameStatusVolume compares "STATUS volume" pairs, the volume by value.
func sameStatusVolume(a, b string) bool {
	as, av, _ := strings.Cut(a, " ")
	bs, bv, _ := strings.Cut(b, " ")
	return as == bs && sameNum(av, bv)
}

// tickSpec is what slippage in money needs of a symbol.
type tickSpec struct{ size, value string }

func (x *analytics) tickSpecs(t *testing.T) map[string]tickSpec {
	t.Helper()
	out := map[string]tickSpec{}
	for _, sym := range []string{"BTCUSD", "ETHUSD"} {
		res := get(t, x.e.client(x.e.main), "/v1/exchangeInfo", url.Values{"symbol": {sym}})
		if res.Status != http.StatusOK {
			t.Fatalf("exchangeInfo %s: %s", sym, res.Body)
		}
		var info struct {
			Symbols []struct {
				TickSize  string `json:"tickSize"`
				TickValue string `json:"tickValue"`
			} `json:"symbols"`
		}
		decode(t, res, &info)
		out[sym] = tickSpec{info.Symbols[0].TickSize, info.Symbols[0].TickValue}
	}
	return out
}

// fillPrice is the average price o filled at, as the trading read model holds it: the API
// shows it rounded to the symbol's digits (a market order), or shows the order's own price
// instead (a pending order).
func (x *analytics) fillPrice(t *testing.T, o *knownOrder) string {
	t.Helper()
	r := pgRows(t, x, `SELECT coalesce(exec_price::text, 'NULL') FROM rm.operations WHERE login = $1 AND client_order_id = $2`,
		o.login, o.coid)
	if len(r) != 1 {
		t.Fatalf("%s: %d operations in the read model", o.coid, len(r))
	}
	return r[0][0]
}

// executedOf is the volume an order shows filled: executedVolume, or for a pending order
// (which shows what remains) its volume less the remaining volume.
func executedOf(f map[string]json.RawMessage) string {
	if v := str(f, "executedVolume"); v != "" {
		return v
	}
	if rem := str(f, "remainingVolume"); rem != "" && str(f, "volume") != "" {
		return dec.String(dec.Sub(dec.MustParse(str(f, "volume")), dec.MustParse(rem)))
	}
	return "0"
}

// expectedSlippage is the slippage of o's fill against its arrival price, in points and in
// the account's currency, from what the API answered (nil: none expected).
func (x *analytics) expectedSlippage(t *testing.T, o *knownOrder, specs map[string]tickSpec) (points, money string, ok bool) {
	executed := executedOf(o.final)
	if o.arrival == "" || cmpDec(executed, "0") == 0 {
		return "", "", false
	}
	diff := dec.Sub(dec.MustParse(x.fillPrice(t, o)), dec.MustParse(o.arrival))
	if o.side == "SELL" {
		diff = dec.Neg(diff)
	}
	pts := dec.Mul(diff, dec.New(1, int32(x.e.digits[o.symbol])))
	sp := specs[o.symbol]
	m := dec.Mul(dec.Mul(dec.MustQuo(diff, dec.MustParse(sp.size)), dec.MustParse(sp.value)), dec.MustParse(executed))
	if o.login == loginCent {
		m = dec.Mul(m, dec.New(100, 0)) // USD to USC
	}
	return dec.Fixed(pts, 4), dec.Fixed(m, 4), true
}

// checkRow holds one execution-quality row to the API's view of the order and to the order
// of its times.
func (x *analytics) checkRow(t *testing.T, o *knownOrder, r map[string]string, specs map[string]tickSpec) {
	t.Helper()
	f := o.final
	apiCode, apiRet := "NULL", "NULL"
	if _, ok := f["code"]; ok {
		apiCode = itoa(num(f, "code"))
	}
	if _, ok := f["mt5RetCode"]; ok {
		apiRet = itoa(num(f, "mt5RetCode"))
	}
	executed := executedOf(f)
	if r["status"] != str(f, "status") || r["code"] != apiCode || r["retcode"] != apiRet || !sameNum(r["executed"], executed) {
		t.Errorf("%s: row %v, API %s", o.coid, r, mustJSON(f))
	}
	if id := num(f, "orderId"); id != 0 && r["order_id"] != itoa(id) {
		t.Errorf("%s: order_id %s, API orderId %d", o.coid, r["order_id"], id)
	}
	if cmpDec(executed, "0") > 0 {
		fill := x.fillPrice(t, o)
		shown := dec.Fixed(dec.MustParse(r["price"]), int32(x.e.digits[o.symbol]))
		if !sameNum(r["price"], fill) || (o.typ == "" || o.typ == "MARKET") && shown != str(f, "price") {
			t.Errorf("%s: fill_price %s, filled at %s, API price %s", o.coid, r["price"], fill, str(f, "price"))
		}
	}
	if points, money, ok := x.expectedSlippage(t, o, specs); ok {
		if !sameNum(r["points"], points) || !sameNum(r["money"], money) {
			t.Errorf("%s: slippage %s points, %s %s; want %s points, %s", o.coid, r["points"], r["money"], r["currency"], points, money)
		}
	} else if r["money"] != "NULL" || r["points"] != "NULL" {
		t.Errorf("%s: slippage %s / %s without an arrival price or a fill", o.coid, r["points"], r["money"])
	}
	if want := map[int64]string{loginCent: "USC"}[o.login]; want != "" && r["currency"] != want ||
		want == "" && r["currency"] != "USD" {
		t.Errorf("%s: currency %s", o.coid, r["currency"])
	}
	// The timeline: received, queued, sent, answered in that order, a fill observed after the
	// send, and all of it within the window the test saw the request in.
	ms := func(k string) int64 {
		var v int64
		fmt.Sscan(r[k], &v)
		return v
	}
	received, queued, sent, answered, observed := ms("received_ms"), ms("queued_ms"), ms("sent"), ms("answered"), ms("observed")
	start, seen := o.start.UnixMilli()-5, o.seen.UnixMilli()+5
	times := []int64{received, queued}
	if sent > 0 {
		times = append(times, sent)
	}
	if answered > 0 {
		times = append(times, answered)
	}
	if !sort.SliceIsSorted(times, func(i, j int) bool { return times[i] < times[j] }) || received < start || times[len(times)-1] > seen {
		t.Errorf("%s: received %d queued %d sent %d answered %d not in order within [%d, %d]", o.coid, received, queued,
			sent, answered, start, seen)
	}
	if ms("deals") > 0 && (observed < sent || observed < received || observed > seen || ms("fill_ms") != observed-received) {
		t.Errorf("%s: first deal observed %d (latency %d), sent %d, received %d", o.coid, observed, ms("fill_ms"), sent, received)
	}
	if str(f, "status") == "REJECTED" && apiRet != "NULL" && answered == 0 {
		t.Errorf("%s: refused by the trade server (mt5RetCode %s) without an answer time", o.coid, apiRet)
	}
}
