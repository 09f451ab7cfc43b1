package e2e_test

import (
	"fmt"
	"os"
	"regexp"
	"sort"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
)

// docQueries are the example queries of docs/analytics.md by name: each is the ```sql block
// after a `<!-- query: NAME -->` line.
func docQueries(t *testing.T) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../../docs/analytics.md")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile("(?s)<!-- query: ([a-z0-9-]+) -->\\s*```sql\\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		if _, dup := out[m[1]]; dup {
			t.Fatalf("docs/analytics.md names query %s twice", m[1])
		}
		out[m[1]] = m[2]
	}
	if len(out) < 12 {
		t.Fatalf("docs/analytics.md holds %d example queries, want a dozen", len(out))
	}
	return out
}

// queryCheck checks one example query's rows.
type queryCheck func(t *testing.T, x *analytics, rows []map[string]string)

// checkQueries runs every example query of docs/analytics.md as written and checks its rows;
// a query without a check, or a check without a query, fails.
func (x *analytics) checkQueries(t *testing.T) {
	ch := x.e.svc.ClickHouse(t)
	checks := map[string]queryCheck{
		"pnl-yesterday":            checkPnLYesterday,
		"pnl-server-days":          checkPnLServerDays,
		"slippage-worst-week":      checkWorstSlippage,
		"slippage-cost-by-login":   checkSlippageCost,
		"rejection-rate-by-code":   checkRejectionRate,
		"rejections-daily":         checkRejectionsDaily,
		"fill-latency-hourly":      checkFillLatency,
		"answer-latency-by-symbol": checkAnswerLatency,
		"execution-daily":          checkExecutionDaily,
		"partial-fills":            checkPartialFills,
		"positions-open-at":        checkOpenPositions,
		"volume-per-group":         checkVolumePerGroup,
		"operations-per-key":       checkOperationsPerKey,
	}
	queries := docQueries(t)
	for name := range checks {
		if _, ok := queries[name]; !ok {
			t.Errorf("docs/analytics.md lost the query %s", name)
		}
	}
	names := make([]string, 0, len(queries))
	for name := range queries {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			check, ok := checks[name]
			if !ok {
				t.Fatalf("docs/analytics.md query %s has no check in this test", name)
			}
			check(t, x, chRows(t, ch, queries[name]))
		})
	}
}

// wantTable compares rows (the named columns, in order) with want; numbers by value.
func wantTable(t *testing.T, rows []map[string]string, cols []string, want [][]string) {
	t.Helper()
	got := make([][]string, len(rows))
	for i, r := range rows {
		for _, c := range cols {
			v, ok := r[c]
			if !ok {
				t.Fatalf("no column %s in %v", c, r)
			}
			got[i] = append(got[i], v)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d\n got  %v\n want %v", len(got), len(want), got, want)
	}
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] && !sameNum(got[i][j], want[i][j]) {
				t.Errorf("row %d %s = %s, want %s\n got  %v\n want %v", i, cols[j], got[i][j], want[i][j], got, want)
			}
		}
	}
}

// chDay is a ClickHouse date expression's value (today(), yesterday()).
func chDay(t *testing.T, x *analytics, expr string) string {
	t.Helper()
	return chRows(t, x.e.svc.ClickHouse(t), "SELECT toString("+expr+") AS d")[0]["d"]
}

const pgDealDay = `to_char(to_timestamp(d.time / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')`

// The P&L view against the deals of the trading read model (the DealAdded_v1 events it
// applied) for the same logins and days: yesterday's, made before the rollover.
func checkPnLYesterday(t *testing.T, x *analytics, rows []map[string]string) {
	day := chDay(t, x, "yesterday()")
	want := pgRows(t, x, `SELECT d.login::text, a.currency, count(*)::text, sum(d.volume)::text, sum(d.profit)::text,
		sum(d.commission)::text, sum(d.swap)::text, sum(d.profit + d.commission + d.swap)::text
		FROM rm.deals d JOIN rm.accounts a USING (login)
		WHERE d.action IN (0, 1) AND `+pgDealDay+` = $1 GROUP BY d.login, a.currency ORDER BY d.login, a.currency`, day)
	if len(want) == 0 && chDay(t, x, "today()") == x.day0 {
		t.Fatalf("no deals on %s: the scenario trades yesterday first", day)
	}
	wantTable(t, rows, []string{"login", "currency", "deals", "lots", "gross_profit", "commissions", "swaps", "net_result"}, want)
}

// By server day: the server's offset shifts deals across midnight; the night's swaps show
// on today's closing deal.
func checkPnLServerDays(t *testing.T, x *analytics, rows []map[string]string) {
	since := chDay(t, x, "today() - 7")
	want := pgRows(t, x, `SELECT day, login::text, currency, count(*)::text, sum(swap)::text, sum(net)::text FROM (
			SELECT to_char(to_timestamp((d.time + s.time_zone_offset_minutes * 60000) / 1000) AT TIME ZONE 'UTC',
				'YYYY-MM-DD') AS day, d.login, a.currency, d.swap, d.profit + d.commission + d.swap AS net
			FROM rm.deals d JOIN rm.accounts a USING (login) CROSS JOIN rm.server s WHERE d.action IN (0, 1)) q
		WHERE day >= $1 GROUP BY day, login, currency ORDER BY day, login, currency`, since)
	wantTable(t, rows, []string{"server_day", "login", "currency", "deals", "swaps", "net_result"}, want)
	swapped := false
	for _, r := range rows {
		if r["login"] == "1001" && cmpDec(r["swaps"], "0") < 0 {
			swapped = true
		}
	}
	if !swapped {
		t.Errorf("no swap in 1001's P&L after the rollover: %v", rows)
	}
}

// slipped lists the orders whose fill has an arrival price, with their expected slippage.
type slipped struct {
	o             *knownOrder
	points, money apd.Decimal
}

func (x *analytics) slipped(t *testing.T) []slipped {
	specs := x.tickSpecs(t)
	var out []slipped
	for _, o := range x.orders {
		if o.final == nil {
			continue
		}
		if p, m, ok := x.expectedSlippage(t, o, specs); ok {
			out = append(out, slipped{o, dec.MustParse(p), dec.MustParse(m)})
		}
	}
	return out
}

// Worst slippage by symbol: eq-b, three ticks on the cent account.
func checkWorstSlippage(t *testing.T, x *analytics, rows []map[string]string) {
	type agg struct {
		n     int
		worst apd.Decimal
		coid  string
	}
	by := map[string]*agg{}
	for _, s := range x.slipped(t) {
		a := by[s.o.symbol]
		if a == nil {
			a = &agg{worst: s.points, coid: s.o.coid}
			by[s.o.symbol] = a
		}
		a.n++
		if s.points.Cmp(&a.worst) > 0 {
			a.worst, a.coid = s.points, s.o.coid
		}
	}
	var want [][]string
	for sym, a := range by {
		want = append(want, []string{sym, fmt.Sprint(a.n), dec.String(a.worst), a.coid})
	}
	sort.Slice(want, func(i, j int) bool {
		if c := cmpDec(want[i][2], want[j][2]); c != 0 {
			return c > 0
		}
		return want[i][0] < want[j][0]
	})
	if len(want) == 0 || want[0][0] != "BTCUSD" || want[0][3] != "eq-b" {
		t.Fatalf("the scenario's worst fill is eq-b on BTCUSD: %v", want)
	}
	wantTable(t, rows, []string{"symbol", "fills", "worst_points", "worst_order"}, want)
}

// The slippage cost per login in its own currency, from the API's fill prices and the
// held quotes: USC for the cent account.
func checkSlippageCost(t *testing.T, x *analytics, rows []map[string]string) {
	type agg struct {
		n             int
		money, points apd.Decimal
	}
	by := map[int64]*agg{}
	for _, s := range x.slipped(t) {
		a := by[s.o.login]
		if a == nil {
			a = &agg{}
			by[s.o.login] = a
		}
		a.n++
		a.money, a.points = dec.Add(a.money, s.money), dec.Add(a.points, s.points)
	}
	var want [][]string
	for login, a := range by {
		cur := "USD"
		if login == loginCent {
			cur = "USC"
		}
		want = append(want, []string{itoa(login), cur, fmt.Sprint(a.n), dec.String(a.money), dec.String(a.points)})
	}
	sort.Slice(want, func(i, j int) bool { return want[i][0] < want[j][0] })
	wantTable(t, rows, []string{"login", "currency", "fills", "cost", "points"}, want)
}

// Rejections by code, as a share of decided operations, against the read model.
func checkRejectionRate(t *testing.T, x *analytics, rows []map[string]string) {
	total := pgRows(t, x, `SELECT count(*)::text FROM rm.operations WHERE kind IS NOT NULL AND kind <> 'CLOSE_ALL'
		AND derived_decided`)[0][0]
	want := pgRows(t, x, `SELECT coalesce(code::text, 'NULL'), coalesce(retcode::text, 'NULL'), count(*)::text,
		round(100.0 * count(*) / $1::numeric, 2)::text FROM rm.operations
		WHERE kind IS NOT NULL AND kind <> 'CLOSE_ALL' AND status = 'REJECTED'
		GROUP BY code, retcode ORDER BY count(*) DESC, code`, total)
	codes := map[string]bool{}
	for _, w := range want {
		codes[w[0]+"/"+w[1]] = true
	}
	if !codes["-4010/10018"] || !codes["-5001/10004"] {
		t.Fatalf("the scenario's refusals (-4010/10018, -5001/10004) are not all in the read model: %v", want)
	}
	wantTable(t, rows, []string{"code", "mt5_retcode", "rejections", "pct_of_decided"}, want)
}

func checkRejectionsDaily(t *testing.T, x *analytics, rows []map[string]string) {
	want := pgRows(t, x, `SELECT symbol, coalesce(code::text, 'NULL'), coalesce(retcode::text, 'NULL'), count(*)::text
		FROM rm.operations WHERE kind IS NOT NULL AND kind <> 'CLOSE_ALL' AND status = 'REJECTED'
		GROUP BY symbol, code, retcode ORDER BY symbol, code`)
	wantTable(t, rows, []string{"symbol", "code", "mt5_retcode", "rejections"}, want)
}

// latencyWindow is the longest wall-clock span the test saw a request and its outcome in.
func (x *analytics) latencyWindow() int64 {
	var w time.Duration
	for _, d := range x.windows {
		w = max(w, d)
	}
	return w.Milliseconds() + 5
}

// Fills per hour against the operations with deals in the read model; their latencies are
// ordered and within what the test saw.
func checkFillLatency(t *testing.T, x *analytics, rows []map[string]string) {
	want := pgRows(t, x, `SELECT to_char(date_trunc('hour', to_timestamp(requested_at / 1000) AT TIME ZONE 'UTC'),
		'YYYY-MM-DD HH24:MI:SS'), count(*)::text FROM rm.operations
		WHERE kind IS NOT NULL AND kind <> 'CLOSE_ALL' AND deal_count > 0 GROUP BY 1 ORDER BY 1`)
	wantTable(t, rows, []string{"hour", "fills"}, want)
	for _, r := range rows {
		if cmpDec(r["p50_ms"], "0") < 0 || cmpDec(r["p50_ms"], r["p99_ms"]) > 0 || cmpDec(r["p99_ms"], itoa(x.latencyWindow())) > 0 {
			t.Errorf("fill latency %v: want 0 <= p50 <= p99 <= %d", r, x.latencyWindow())
		}
	}
}

// Answers per symbol today against the read model's in-band answers.
func checkAnswerLatency(t *testing.T, x *analytics, rows []map[string]string) {
	want := pgRows(t, x, `SELECT symbol, count(*)::text FROM rm.operations
		WHERE kind IS NOT NULL AND kind <> 'CLOSE_ALL' AND out_retcode IS NOT NULL AND NOT coalesce(out_unanswered, false)
		AND out_attempt = attempt AND to_char(to_timestamp(requested_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD') = $1
		GROUP BY symbol ORDER BY symbol`, chDay(t, x, "today()"))
	wantTable(t, rows, []string{"symbol", "answered"}, want)
	for _, r := range rows {
		if cmpDec(r["p50_ms"], "0") < 0 || cmpDec(r["p50_ms"], r["max_ms"]) > 0 || cmpDec(r["max_ms"], itoa(x.latencyWindow())) > 0 {
			t.Errorf("answer latency %v: want 0 <= p50 <= max <= %d", r, x.latencyWindow())
		}
	}
}

// The view per symbol today against the read model; BTCUSD's worst slippage is eq-b's.
func checkExecutionDaily(t *testing.T, x *analytics, rows []map[string]string) {
	want := pgRows(t, x, `SELECT symbol, count(*)::text, count(*) FILTER (WHERE executed_volume > 0)::text,
		count(*) FILTER (WHERE status = 'REJECTED')::text, count(*) FILTER (WHERE status = 'IN_DOUBT')::text,
		coalesce(sum(executed_volume), 0)::text
		FROM rm.operations WHERE kind IS NOT NULL AND kind <> 'CLOSE_ALL' AND derived_decided
		AND to_char(to_timestamp(requested_at / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD') = $1
		GROUP BY symbol ORDER BY symbol`, chDay(t, x, "today()"))
	wantTable(t, rows, []string{"symbol", "operations", "fills", "rejections", "in_doubt", "executed_lots"}, want)
	for _, r := range rows {
		if r["symbol"] == "BTCUSD" && !sameNum(r["slippage_points_max"], "3") {
			t.Errorf("BTCUSD's worst slippage %s points, want eq-b's 3", r["slippage_points_max"])
		}
	}
}

// eq-c filled 0.02 of 0.03 in two deals, at the average the API answered.
func checkPartialFills(t *testing.T, x *analytics, rows []map[string]string) {
	want := [][]string{{"1002", "eq-c", "BTCUSD", "PARTIALLY_FILLED", "0.03", "0.02", "2", x.fillPrice(t, x.order("eq-c"))}}
	others := pgRows(t, x, `SELECT client_order_id FROM rm.operations WHERE kind IS NOT NULL AND kind <> 'CLOSE_ALL'
		AND (status = 'PARTIALLY_FILLED' OR deal_count > 1)`)
	if len(others) != 1 || others[0][0] != "eq-c" {
		t.Fatalf("the read model's partial or multi-deal fills: %v, want eq-c alone", others)
	}
	wantTable(t, rows, []string{"login", "client_order_id", "symbol", "status", "requested_volume", "executed_volume",
		"deals", "fill_price"}, want)
}

// The positions open now against the read model's open positions.
func checkOpenPositions(t *testing.T, x *analytics, rows []map[string]string) {
	want := pgRows(t, x, `SELECT login::text, position_id::text, symbol, volume::text FROM rm.positions
		WHERE open ORDER BY login, position_id`)
	if len(want) == 0 {
		t.Fatal("no open position in the read model: the scenario leaves some")
	}
	wantTable(t, rows, []string{"login", "position_id", "position_symbol", "open_volume"}, want)
}

func checkVolumePerGroup(t *testing.T, x *analytics, rows []map[string]string) {
	want := pgRows(t, x, `SELECT a.grp, a.currency, count(*)::text, sum(d.volume)::text
		FROM rm.deals d JOIN rm.accounts a USING (login) WHERE d.action IN (0, 1)
		GROUP BY a.grp, a.currency ORDER BY a.grp, a.currency`)
	groups := map[string]bool{}
	for _, w := range want {
		groups[w[0]] = true
	}
	if len(groups) < 3 {
		t.Fatalf("the scenario trades in real USD, cent and demo groups: %v", want)
	}
	wantTable(t, rows, []string{"grp", "currency", "deals", "lots"}, want)
}

func checkOperationsPerKey(t *testing.T, x *analytics, rows []map[string]string) {
	want := pgRows(t, x, `SELECT api_key_id::text, count(*)::text, count(*) FILTER (WHERE executed_volume > 0)::text,
		coalesce(sum(executed_volume), 0)::text FROM rm.operations WHERE kind IS NOT NULL AND kind <> 'CLOSE_ALL'
		GROUP BY api_key_id ORDER BY api_key_id`)
	if len(want) == 0 {
		t.Fatal("no operations in the read model")
	}
	wantTable(t, rows, []string{"api_key_id", "operations", "filled", "lots"}, want)
}
