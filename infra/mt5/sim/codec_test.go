package sim

import (
	"encoding/json"
	"fmt"
	"testing"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// TestJournalCodecMatchesEncodingJSON proves the hand-written encoder loses nothing: every
// record decodes to exactly what encoding/json's own output decodes to.
func TestJournalCodecMatchesEncodingJSON(t *testing.T) {
	deal := &mt5.Deal{Ticket: 7, Login: 1001, Order: 3, Position: 3, Symbol: "BTCUSD", Action: trading.DealSell, Entry: trading.EntryOut,
		Reason: trading.ReasonSL, Volume: D("0.10"), Price: D("60010.00"), Profit: D("-1.5"), Commission: D("-0.20"), Swap: D("0.00"),
		Comment: "quote \" back\\slash \x01 ünï", Time: 1795262583000}
	order := &mt5.Order{Ticket: 3, Login: 1001, Symbol: "EURUSD", Type: trading.OrderSellStopLimit, State: trading.StateRequestModify,
		TypeTime: trading.TimeSpecifiedDay, Filling: trading.FillIOC, Expiration: 99, VolumeInitial: D("1"), VolumeCurrent: D("0.5"),
		Price: D("1.08500"), StopLimit: D("1.08600"), SL: D("1.09"), TP: D("1.07"), PositionID: 4, Reason: trading.ReasonRollover,
		Comment: "c", TimeSetup: 1, TimeDone: 2, TimeUpdate: 3}
	pos := &mt5.Position{Ticket: 4, Login: 1004, Symbol: "XAUUSD", Type: trading.Sell, Volume: D("0.01"), PriceOpen: D("2350.00"),
		PriceCurrent: D("2351.00"), SL: D("0"), Profit: D("-100.00"), Swap: D("-3.21"), Comment: "", TimeCreate: 5, TimeUpdate: 6}
	acc := &mt5.Account{Login: 1005, Group: `real\hedge-usd`, Currency: "USC", Leverage: 100, Demo: true, TradeAllowed: false,
		Balance: D("10000.00"), Equity: D("9999.99"), MarginLevel: D("0.00"), UpdateTime: 8}
	recs := []record{
		{Meta: &meta{RolloverDay: 20000}},
		{Fact: &mt5.Fact{Seq: 1, Kind: mt5.FactDeal, Login: 1001, Time: 9, Action: trading.ChangeNew, Deal: deal}},
		{Fact: &mt5.Fact{Seq: 2, Kind: mt5.FactOrder, Login: 1001, Time: 9, Action: trading.ChangeDelete, Order: order}},
		{Fact: &mt5.Fact{Seq: 3, Kind: mt5.FactPosition, Login: 1004, Time: 9, Action: trading.ChangeClose, Position: pos}},
		{Fact: &mt5.Fact{Seq: 4, Kind: mt5.FactAccount, Login: 1005, Time: 9, Action: trading.ChangeUpdate, Account: acc}},
	}
	for i := range recs {
		std, err := json.Marshal(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		mine := appendRecord(nil, &recs[i])
		var a, b record
		if err := json.Unmarshal(std, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(mine, &b); err != nil {
			t.Fatalf("decode %s: %v", mine, err)
		}
		if fa, fb := dump(a), dump(b); fa != fb {
			t.Fatalf("record %d differs:\n%s\n%s", i, fa, fb)
		}
	}
}

func dump(r record) string {
	if r.Meta != nil {
		return fmt.Sprintf("%+v", *r.Meta)
	}
	b, _ := json.Marshal(&r) // decimals print as text, so equal values print equally
	return string(b)
}
