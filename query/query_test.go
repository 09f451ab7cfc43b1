package query_test

import (
	"context"
	"errors"
	"testing"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/gateway/gwtest"
	"tradesvc/query"
)

var bg = context.Background()

func code(err error) events.Code {
	var r *events.Rejection
	if errors.As(err, &r) {
		return r.Code
	}
	return 0
}

func ptr(n int64) *int64 { return &n }

const day = int64(86_400_000)

// market with 1-minute bars for EURUSD at minutes 0..n-1 after base.
func barsMarket(base int64, n int) *gwtest.Market {
	m := gwtest.NewMarket()
	m.AddSymbol(gwtest.EURUSD())
	for i := 0; i < n; i++ {
		m.AddBars("EURUSD", query.Bar{OpenTime: base + int64(i)*60_000, Open: dec.New(100000+int64(i), -5),
			High: dec.New(100100+int64(i), -5), Low: dec.New(99900-int64(i), -5), Close: dec.New(100050+int64(i), -5), Count: 1})
	}
	return m
}

func TestKlinesAggregation(t *testing.T) {
	base := 100 * day                   // midnight UTC
	m := barsMarket(base-30*60_000, 90) // 23:30 the day before to 01:00
	h, err := query.NewSymbolsHandler[query.KlinesHandler, query.BarReader](m, m)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := h.Handle(bg, query.KlinesQuery{Symbol: "EURUSD", Interval: "1h", Now: base + 2*3_600_000})
	if err != nil {
		t.Fatal(err)
	}
	// buckets 23:00 (bars 23:30-23:59) and 00:00 (bars 00:00-00:59); 01:00 and 02:00 have no bars
	if len(rows) != 2 {
		t.Fatalf("rows %v", rows)
	}
	r := rows[1]
	if r[0] != base || r[1] != "1.00030" || r[2] != "1.00189" || r[3] != "0.99811" || r[4] != "1.00139" ||
		r[5] != int64(60) || r[6] != base+3_600_000-1 || r[7] != 0 {
		t.Fatalf("row %v", r)
	}
	// 1d candles open at 00:00 UTC
	rows, _ = h.Handle(bg, query.KlinesQuery{Symbol: "EURUSD", Interval: "1d", Now: base + 3_600_000})
	if len(rows) != 2 || rows[0][0] != base-day || rows[1][0] != base || rows[0][5] != int64(30) {
		t.Fatalf("1d rows %v", rows)
	}
	// startTime: buckets opening at or after it, oldest first, limited
	rows, _ = h.Handle(bg, query.KlinesQuery{Symbol: "EURUSD", Interval: "15m", StartTime: ptr(base - 20*60_000), Limit: 2, Now: base + day})
	if len(rows) != 2 || rows[0][0] != base-15*60_000 || rows[1][0] != base {
		t.Fatalf("startTime rows %v", rows)
	}
	// endTime alone: the limit buckets ending at it
	rows, _ = h.Handle(bg, query.KlinesQuery{Symbol: "EURUSD", Interval: "5m", EndTime: ptr(base + 7*60_000), Limit: 3, Now: base + day})
	if len(rows) != 3 || rows[0][0] != base-5*60_000 || rows[2][0] != base+5*60_000 {
		t.Fatalf("endTime rows %v", rows)
	}
	// both: inclusive window on open time
	rows, _ = h.Handle(bg, query.KlinesQuery{Symbol: "EURUSD", Interval: "1m", StartTime: ptr(base), EndTime: ptr(base + 60_000), Now: base + day})
	if len(rows) != 2 {
		t.Fatalf("window rows %v", rows)
	}
}

func TestKlinesRejections(t *testing.T) {
	m := barsMarket(0, 0)
	h, _ := query.NewSymbolsHandler[query.KlinesHandler, query.BarReader](m, m)
	for _, c := range []struct {
		q    query.KlinesQuery
		want events.Code
	}{
		{query.KlinesQuery{Symbol: "EURUSD", Interval: "1w"}, events.CodeInvalidInterval},
		{query.KlinesQuery{Symbol: "eurusd", Interval: "1m"}, events.CodeInvalidSymbol},
		{query.KlinesQuery{Symbol: "EURUSD", Interval: "1m", Limit: 1001}, events.CodeInvalidData},
		{query.KlinesQuery{Symbol: "EURUSD", Interval: "1m", Limit: -1}, events.CodeInvalidData},
		{query.KlinesQuery{Symbol: "EURUSD", Interval: "1m", StartTime: ptr(2), EndTime: ptr(1)}, events.CodeBadCombination},
	} {
		if _, err := h.Handle(bg, c.q); code(err) != c.want {
			t.Errorf("%+v: %v, want %d", c.q, err, c.want)
		}
	}
	if _, err := query.NewSymbolsHandler[query.KlinesHandler, query.BarReader](nil, m); err == nil {
		t.Fatal("nil reader accepted")
	}
}

func TestIntervalFloor(t *testing.T) {
	iv, _ := query.ParseInterval("4h")
	if iv.Floor(-1) != -4*3_600_000 || iv.Floor(0) != 0 || iv.Ceil(1) != 4*3_600_000 || iv.Ceil(0) != 0 {
		t.Fatal("floor/ceil")
	}
}

func TestHistoryWindow(t *testing.T) {
	now := int64(100 * day)
	const week = query.MaxHistorySpanMs
	cases := []struct {
		start, end *int64
		from, to   int64
		code       events.Code
	}{
		{nil, nil, now - week, now, 0},
		{nil, ptr(50 * day), 50*day - week, 50 * day, 0},
		{ptr(now - day), nil, now - day, now, 0},
		{ptr(now - week - 1), nil, 0, 0, events.CodeSpanTooBig},
		{ptr(10), ptr(10 + week), 10, 10 + week, 0},
		{ptr(10), ptr(11 + week), 0, 0, events.CodeSpanTooBig},
		{ptr(10), ptr(9), 0, 0, events.CodeBadCombination},
	}
	for i, c := range cases {
		from, to, err := query.HistoryWindow(c.start, c.end, now)
		if code(err) != c.code || (c.code == 0 && (from != c.from || to != c.to)) {
			t.Errorf("case %d: %d %d %v", i, from, to, err)
		}
	}
}

type leakyAccounts struct{ inner *gwtest.Accounts }

// Accounts returns every account it holds, even ones not asked for.
func (l leakyAccounts) Accounts(ctx context.Context, _ []int64) ([]query.Account, error) {
	return l.inner.Accounts(ctx, []int64{1, 2, 3})
}

func (l leakyAccounts) Account(ctx context.Context, login int64) (query.Account, bool, error) {
	return l.inner.Account(ctx, login)
}

func TestAccountsNeverExceedScope(t *testing.T) {
	a := gwtest.NewAccounts(query.Account{Login: 3, Demo: true}, query.Account{Login: 1}, query.Account{Login: 2})
	h, _ := query.NewAccountHandler(leakyAccounts{a})
	items, err := h.List(bg, query.AccountsQuery{Logins: []int64{3, 1}})
	if err != nil || len(items) != 2 || items[0].Login != 1 || items[1] != (query.AccountItem{Login: 3, Demo: true}) {
		t.Fatalf("%v %v", items, err)
	}
	items, _ = h.List(bg, query.AccountsQuery{})
	if items == nil || len(items) != 0 {
		t.Fatal("no logins must be an empty array")
	}
}

func TestAccountMissingIs2022(t *testing.T) {
	h, _ := query.NewAccountHandler(gwtest.NewAccounts())
	if _, err := h.Handle(bg, query.AccountQuery{Login: 5}); code(err) != events.CodeLoginOutOfScope {
		t.Fatal(err)
	}
}

func TestMarginLevelZeroWithoutPositions(t *testing.T) {
	h, _ := query.NewAccountHandler(gwtest.NewAccounts(query.Account{Login: 5, Currency: "USC", Balance: dec.MustParse("100")}))
	rec, err := h.Handle(bg, query.AccountQuery{Login: 5})
	if err != nil || rec.MarginLevel != "0.00" || rec.Balance != "100.0000" || rec.Currency != "USC" {
		t.Fatalf("%+v %v", rec, err)
	}
}

func TestExchangeInfoDedupesAndDefaultsEmptyLists(t *testing.T) {
	m := gwtest.NewMarket()
	s := gwtest.EURUSD()
	s.FillModes, s.Sessions = nil, [7][]events.Session{}
	m.AddSymbol(s)
	h, _ := query.NewExchangeInfoHandler(m, m)
	info, err := h.Handle(bg, query.ExchangeInfoQuery{Symbols: []string{"EURUSD", "EURUSD"}, Now: 7})
	if err != nil || len(info.Symbols) != 1 || info.Symbols[0].FillModes == nil || len(info.Symbols[0].Sessions) != 7 ||
		info.RateLimits == nil || info.ServerTime != 7 {
		t.Fatalf("%+v %v", info, err)
	}
}

func TestTicksLimitValidation(t *testing.T) {
	m := gwtest.NewMarket()
	m.AddSymbol(gwtest.EURUSD())
	h, _ := query.NewSymbolsHandler[query.TicksHandler, query.QuoteReader](m, m)
	if _, err := h.Handle(bg, query.TicksQuery{Symbol: "EURUSD", Limit: 1001}); code(err) != events.CodeInvalidData {
		t.Fatal(err)
	}
	ticks, err := h.Handle(bg, query.TicksQuery{Symbol: "EURUSD"})
	if err != nil || ticks == nil || len(ticks) != 0 {
		t.Fatal(ticks, err)
	}
}
