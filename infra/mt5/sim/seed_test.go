package sim

import (
	"strings"
	"testing"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

func TestDefaultSeedHasWhatTheDesignRequires(t *testing.T) {
	h := newHarness(t)
	accs, err := h.s.Accounts(h.ctx)
	if err != nil {
		t.Fatal(err)
	}
	byLogin := map[int64]mt5.Account{}
	for _, a := range accs {
		byLogin[a.Login] = a
	}
	for _, l := range []int64{1001, 1002} {
		a := byLogin[l]
		if a.Demo || a.Currency != "USD" || a.Leverage != 100 || !a.TradeAllowed {
			t.Errorf("%d: %+v", l, a)
		}
		eqDec(t, "balance", a.Balance, "10000")
	}
	if !byLogin[1003].Demo || byLogin[1004].Currency != "USC" || byLogin[1005].TradeAllowed {
		t.Errorf("demo / cent / disabled accounts wrong: %+v %+v %+v", byLogin[1003], byLogin[1004], byLogin[1005])
	}
	info, _ := h.s.ServerInfo(h.ctx)
	if info.TimeZoneOffsetMinutes != 180 {
		t.Errorf("offset %d", info.TimeZoneOffsetMinutes)
	}
	syms, _ := h.s.Symbols(h.ctx)
	modes := map[trading.TradeMode]int{}
	var always247Full, request, noSLTP, noGTD, neverOpen int
	for _, y := range syms {
		modes[y.TradeMode]++
		if tv := dec.Mul(y.TickSize, y.ContractSize); tv.Cmp(&y.TickValue) != 0 {
			t.Errorf("%s: tickValue %s, tickSize*contract %s", y.Name, dec.String(y.TickValue), dec.String(tv))
		}
		if !dec.IsMultiple(y.TickSize, y.Point) || !dec.IsMultiple(y.VolumeMin, y.VolumeStep) {
			t.Errorf("%s: tick size or volume step inconsistent", y.Name)
		}
		all, none := true, true
		for d := 0; d < 7; d++ {
			full := len(y.Sessions[d]) == 1 && y.Sessions[d][0] == mt5.Session{Open: 0, Close: 1440}
			all = all && full
			none = none && len(y.Sessions[d]) == 0
		}
		if all && y.TradeMode == trading.TradeFull && y.ExecutionMode == trading.ExecMarket {
			always247Full++
		}
		if !all && y.TradeMode != trading.TradeFull {
			t.Errorf("%s: a restricted trade mode must trade 24/7 so tests of it never depend on the clock", y.Name)
		}
		if none {
			neverOpen++
		}
		if y.ExecutionMode == trading.ExecRequest {
			request++
		}
		if y.OrderModes&(trading.ModeSL|trading.ModeTP) == 0 {
			noSLTP++
		}
		if !y.ExpirationModes.Allows(trading.TimeSpecified) {
			noGTD++
		}
	}
	for m := trading.TradeDisabled; m <= trading.TradeFull; m++ {
		if modes[m] == 0 {
			t.Errorf("no symbol in trade mode %v", m)
		}
	}
	if always247Full < 2 || request == 0 || noSLTP == 0 || noGTD == 0 || neverOpen == 0 {
		t.Errorf("24/7 FULL %d, REQUEST %d, no SL/TP %d, no GTD %d, never open %d", always247Full, request, noSLTP, noGTD, neverOpen)
	}
}

func TestBadSeedIsRefusedWithEveryProblem(t *testing.T) {
	_, err := Open(Config{DataDir: t.TempDir(), Seed: []byte(`{"groups":[{"name":"g","currency":"USD","leverage":0}],
		"accounts":[{"login":1,"group":"nope","balance":"1"}],
		"symbols":[{"name":"X","digits":2,"contractSize":"1","tradeMode":"FULLY","executionMode":"MARKET","sessions":"none","initialBid":"1.001"}]}`)})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"leverage", "unknown group", "tradeMode", "session template", "initialBid"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
