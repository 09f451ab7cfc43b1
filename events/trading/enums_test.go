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
