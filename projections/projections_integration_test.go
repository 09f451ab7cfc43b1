package projections

import (
	"context"
	"slices"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"

	"github.com/cockroachdb/apd/v3"
)

func msgs(evs ...events.Event) []batch.Message {
	out := make([]batch.Message, len(evs))
	for i, e := range evs {
		out[i] = batch.Message{Event: e}
	}
	return out
}

func snapshot(login int64, balance string, at int64) *events.AccountSnapshot {
	z := dec.MustParse("0")
	return &events.AccountSnapshot{AccountHeader: events.AccountHeader{Login: login, Group: "real\\usd", Currency: "USD",
		Leverage: 100, TradeAllowed: true}, Active: true, Balance: dec.MustParse(balance), Credit: z, Equity: dec.MustParse(balance), Margin: z,
		FreeMargin: dec.MustParse(balance), Profit: z, MarginLevel: z, Time: at, ObservedAt: at}
}

func TestReferenceProjectionIsIdempotentAndNeverMovesBackwards(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	changed := 0
	ref, err := NewReference(pool, func(RefScope) { changed++ })
	if err != nil {
		t.Fatal(err)
	}
	reader, err := NewReferenceReader(pool, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	spec := &events.SymbolSpecified{SymbolSpecOf: events.SymbolSpecOf[apd.Decimal]{Symbol: "BTCUSD", Digits: 2,
		TickSize: dec.MustParse("0.01"), TradeMode: "FULL", FillModes: []string{"FOK", "IOC"}, Swap3Days: "WEDNESDAY"},
		Time: 1000}
	spec.Sessions[1] = []events.Session{{Open: "00:00", Close: "24:00"}}
	batch1 := msgs(spec, &events.ServerSpecified{Name: "sim", TimeZoneOffsetMinutes: 180, Time: 1000},
		snapshot(1001, "10000.00", 2000))
	for i := 0; i < 2; i++ { // a redelivered batch changes nothing
		if err := ref.Apply(ctx, batch1); err != nil {
			t.Fatal(err)
		}
	}
	// An older snapshot arriving late (replay overlap) must not win over the newer one.
	if err := ref.Apply(ctx, msgs(snapshot(1001, "9000.00", 3000), snapshot(1001, "5.00", 2500))); err != nil {
		t.Fatal(err)
	}
	// Regression: the server's update time can stand still (or be older than a first
	// snapshot's) while the figures change; snapshots are ordered by when they were observed.
	deposit := snapshot(1002, "10000.00", 5000)
	if err := ref.Apply(ctx, msgs(deposit)); err != nil {
		t.Fatal(err)
	}
	later := snapshot(1002, "10100.00", 4000)
	later.ObservedAt = 6000
	if err := ref.Apply(ctx, msgs(later)); err != nil {
		t.Fatal(err)
	}
	if a, ok, err := reader.Account(ctx, 1002); err != nil || !ok || dec.String(a.Balance) != "10100.00" || a.UpdateTime != 4000 {
		t.Fatalf("account 1002 = %+v ok=%v err=%v; want the later-observed snapshot", a, ok, err)
	}
	reader.Invalidate()
	got, ok, err := reader.Symbol(ctx, "BTCUSD")
	if err != nil || !ok || got.Digits != 2 || string(got.TradeMode) != "FULL" || len(got.FillModes) != 2 ||
		got.Sessions[trading.Monday][0].Close != "24:00" || len(got.Sessions[trading.Sunday]) != 0 {
		t.Fatalf("symbol = %+v ok=%v err=%v", got, ok, err)
	}
	if _, ok, _ := reader.Symbol(ctx, "btcusd"); ok {
		t.Fatal("symbol lookup must be case-sensitive")
	}
	if reader.TimeZoneOffsetMinutes() != 180 {
		t.Fatalf("tz offset = %d", reader.TimeZoneOffsetMinutes())
	}
	acct, ok, err := reader.Account(ctx, 1001)
	if err != nil || !ok || dec.String(acct.Balance) != "9000.00" || acct.UpdateTime != 3000 {
		t.Fatalf("account = %+v ok=%v err=%v", acct, ok, err)
	}
	if _, ok, _ := reader.Account(ctx, 4242); ok {
		t.Fatal("unknown login found")
	}
	if changed == 0 {
		t.Fatal("symbol changes did not signal the cache")
	}
}

// Reference changes invalidate what readers cache, and only that: a new symbol everything,
// an account's flags (or a new account) the cached accounts, its figures moving nothing.
func TestReferenceChangesSignalOnlyWhatReadersCache(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	var scopes []RefScope
	ref, err := NewReference(pool, func(s RefScope) { scopes = append(scopes, s) })
	if err != nil {
		t.Fatal(err)
	}
	apply := func(what string, want []RefScope, evs ...events.Event) {
		t.Helper()
		scopes = nil
		if err := ref.Apply(ctx, msgs(evs...)); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(scopes, want) {
			t.Errorf("%s: signalled %q, want %q", what, scopes, want)
		}
	}
	apply("a new account", []RefScope{RefAccounts}, snapshot(1001, "100.00", 1000))
	apply("its figures moving", nil, snapshot(1001, "101.00", 2000), snapshot(1001, "102.00", 3000))
	off := snapshot(1001, "102.00", 4000)
	off.TradeAllowed = false
	apply("trading switched off", []RefScope{RefAccounts}, off)
	stale := snapshot(1001, "1.00", 3500) // older than what is stored: not applied
	apply("an older snapshot", nil, stale)
	inactive := snapshot(1001, "102.00", 5000)
	inactive.TradeAllowed, inactive.Active = false, false
	apply("the account deactivated", []RefScope{RefAccounts}, inactive)
	apply("a symbol", []RefScope{RefAll}, &events.SymbolSpecified{
		SymbolSpecOf: events.SymbolSpecOf[apd.Decimal]{Symbol: "ETHUSD", Digits: 2, TickSize: dec.MustParse("0.01"),
			TradeMode: "FULL", Swap3Days: "WEDNESDAY"}, Time: 1000},
		snapshot(1001, "103.00", 6000))
}

func tickMsg(seq uint64, bid string, at int64) batch.Message {
	b := dec.MustParse(bid)
	return batch.Message{Event: &events.TickReceived{Seq: seq, Symbol: "BTCUSD", Bid: b, Ask: dec.Add(b, dec.MustParse("1")), Last: b, Time: at}}
}

// Regression: a batch whose ticks crossed a minute boundary lost the closed bar's last state.
func TestOneMinuteBarsAreExactUnderRedeliveryRestartAndReplay(t *testing.T) {
	ctx := context.Background()
	conn := testenv.MigratedCH(t)
	h, err := NewMarketHistory(conn)
	if err != nil {
		t.Fatal(err)
	}
	const m0 = 1_800_000_000_000 - 1_800_000_000_000%60000
	first := []batch.Message{tickMsg(1, "100.00", m0+1000), tickMsg(2, "105.50", m0+2000), tickMsg(3, "99.25", m0+3000)}
	second := []batch.Message{tickMsg(4, "101.00", m0+59000), tickMsg(5, "200.00", m0+60000)}
	if err := h.Apply(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := h.Apply(ctx, first); err != nil { // redelivered: counted once
		t.Fatal(err)
	}
	// A restarted projector (empty memory) must pick up the stored open bar, and a batch
	// overlapping what was already applied must not count the overlap again.
	h2, _ := NewMarketHistory(conn)
	if err := h2.Apply(ctx, append(first[2:], second...)); err != nil {
		t.Fatal(err)
	}
	reader, _ := NewHistoryReader(conn)
	bars, err := reader.Candles(ctx, "BTCUSD", 60000, m0, m0+60000, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(bars) != 2 {
		t.Fatalf("want 2 bars, got %+v", bars)
	}
	b := bars[0]
	if b.OpenTime != m0 || b.Count != 4 || dec.String(b.Open) != "100.00000000" || dec.String(b.High) != "105.50000000" ||
		dec.String(b.Low) != "99.25000000" || dec.String(b.Close) != "101.00000000" {
		t.Fatalf("first bar wrong: %+v", b)
	}
	if bars[1].OpenTime != m0+60000 || bars[1].Count != 1 || dec.String(bars[1].Open) != "200.00000000" {
		t.Fatalf("second bar wrong: %+v", bars[1])
	}
	// ClickHouse folds 1-minute bars into wider candles: open of the first, close of the last.
	fives, err := reader.Candles(ctx, "BTCUSD", 300000, m0-m0%300000, m0+60000, 10)
	if err != nil || len(fives) != 1 {
		t.Fatalf("5m candles: %+v %v", fives, err)
	}
	if f := fives[0]; f.OpenTime != m0-m0%300000 || f.Count != 5 || dec.String(f.Open) != "100.00000000" ||
		dec.String(f.High) != "200.00000000" || dec.String(f.Low) != "99.25000000" || dec.String(f.Close) != "200.00000000" {
		t.Fatalf("5m candle wrong: %+v", f)
	}
	// Replay from scratch (reset, then the whole log again) gives the same bars.
	if err := h2.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h2.Apply(ctx, append(append([]batch.Message{}, first...), second...)); err != nil {
		t.Fatal(err)
	}
	again, err := reader.Candles(ctx, "BTCUSD", 60000, m0, m0+60000, 10)
	if err != nil || len(again) != 2 || again[0].Count != 4 || again[1].Count != 1 {
		t.Fatalf("after replay: %+v %v", again, err)
	}
}

func TestDealHistoryCollapsesRedeliveredDeals(t *testing.T) {
	ctx := context.Background()
	conn := testenv.MigratedCH(t)
	h, err := NewDealHistory(conn)
	if err != nil {
		t.Fatal(err)
	}
	z := dec.MustParse("0")
	deal := &events.DealAdded{Fact: events.Fact{Seq: 9, Login: 1001}, DealID: 9007199254740993, OrderID: 5, PositionID: 5, Symbol: "BTCUSD",
		Entry: 1, Volume: dec.MustParse("0.10"), Price: dec.MustParse("60000.12"), Profit: dec.MustParse("-12.3456"),
		Commission: dec.MustParse("-0.70"), Swap: z, Time: 1_800_000_000_000}
	for i := 0; i < 3; i++ {
		if err := h.Apply(ctx, msgs(deal)); err != nil {
			t.Fatal(err)
		}
	}
	var n uint64
	var profit string
	var id int64
	if err := conn.QueryRow(ctx, "SELECT count(), any(toString(profit)), any(deal_id) FROM deals FINAL").Scan(&n, &profit, &id); err != nil {
		t.Fatal(err)
	}
	if n != 1 || profit != "-12.3456" || id != 9007199254740993 {
		t.Fatalf("deals: count=%d profit=%s id=%d", n, profit, id)
	}
}
