package trading

import "testing"

func TestEnumNamesFollowTheSpecAndUnknownValuesDoNotCrash(t *testing.T) {
	cases := map[string]string{
		OrderSellStopLimit.String(): "SELL_STOP_LIMIT", OrderType(12).String(): "UNKNOWN_12",
		StateRequestCancel.String(): "REQUEST_CANCEL", TimeSpecifiedDay.String(): "GTD_DAY",
		EntryOutBy.String(): "OUT_BY", TradeCloseOnly.String(): "CLOSE_ONLY", ExecRequest.String(): "REQUEST",
		SwapReopenByBid.String(): "REOPEN_BY_BID", SwapMode(10).String(): "UNKNOWN_10", TripleDisabled.String(): "DISABLED",
		ChangeClose.String(): "CLOSE", RetHedgeProhibited.String(): "HEDGE_PROHIBITED", Retcode(10050).String(): "10050",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("%s, want %s", got, want)
		}
	}
}

func TestMasksAllowWhatTheyName(t *testing.T) {
	m := ModeMarket | ModeLimit | ModeSL
	if !m.AllowsType(OrderSell) || !m.AllowsType(OrderSellLimit) || m.AllowsType(OrderBuyStop) || m.AllowsType(OrderCloseBy) {
		t.Error("order modes")
	}
	e := ExpireGTC | ExpireSpecifiedDay
	if !e.Allows(TimeGTC) || e.Allows(TimeDay) || e.Allows(TimeSpecified) || !e.Allows(TimeSpecifiedDay) || e.Allows(TimeType(9)) {
		t.Error("expiration modes")
	}
	if !OrderBuyStopLimit.IsBuy() || OrderSellLimit.IsBuy() || !OrderSellStopLimit.IsPending() || OrderSell.IsPending() {
		t.Error("type predicates")
	}
	codes := AllRetcodes()
	if len(codes) != 41 || codes[0] != RetRequote || codes[len(codes)-1] != RetHedgeProhibited {
		t.Errorf("retcodes %v", codes)
	}
	if !RetDonePartial.Success() || RetRequote.Success() {
		t.Error("success")
	}
}

// TestFormatTag: a tag is '#' and six base-62 digits; distinct numbers give distinct tags,
// from the first to the last of the space.
func TestFormatTag(t *testing.T) {
	for n, want := range map[int64]string{0: "#000000", 61: "#00000z", 62: "#000010", TagSpace - 1: "#zzzzzz"} {
		if got := FormatTag(n); got != want {
			t.Errorf("FormatTag(%d) = %q, want %q", n, got, want)
		}
	}
	seen := map[string]bool{}
	for n := int64(0); n < 5000; n++ {
		tag := FormatTag(n * 11400714 % TagSpace)
		if len(tag) != TagLen || tag[0] != '#' || seen[tag] || TagOf("c"+tag) != tag {
			t.Fatalf("tag %q of %d", tag, n)
		}
		seen[tag] = true
	}
}

// TestAnswered pins when a wait is over: a status other than the queued one, or a code; a
// market fill or a close only once its deals confirm it.
func TestAnswered(t *testing.T) {
	for _, c := range []struct {
		op   Operation
		want bool
	}{
		{Operation{Kind: KindPlaceOrder, Type: "BUY_LIMIT", Status: "NEW"}, false},
		{Operation{Kind: KindPlaceOrder, Type: "BUY_LIMIT", Status: "NEW", Retcode: 10008}, true},
		{Operation{Kind: KindPlaceOrder, Type: "MARKET", Status: "FILLED", Retcode: 10009}, false},
		{Operation{Kind: KindPlaceOrder, Type: "MARKET", Status: "FILLED", Retcode: 10009, Deals: 1, Decided: true}, true},
		{Operation{Kind: KindPlaceOrder, Type: "MARKET", Status: "FILLED", Deals: 1}, false},
		{Operation{Kind: KindClosePosition, Type: "MARKET", Status: "FILLED"}, false},
		{Operation{Kind: KindPlaceOrder, Type: "MARKET", Status: "REJECTED", Code: -4010, Retcode: 10018}, true},
		{Operation{Kind: KindModifyPosition, Status: "FILLED", Retcode: 10009}, true},
		{Operation{Kind: KindCancelOrder, Status: "ACCEPTED"}, false},
	} {
		if got := c.op.Answered(); got != c.want {
			t.Errorf("Answered(%+v) = %v, want %v", c.op, got, c.want)
		}
	}
}
