package streams

import (
	"testing"

	"tradesvc/events"
	"tradesvc/events/dec"
)

// The user-stream frames of docs/streams.md, field for field and in the doc's order: prices
// at the symbol's digits, money at 4 places, the raw order state beside its status, and the
// stream's time-in-force inference.
func TestUserFramesRenderFactsAsTheDocSpecifies(t *testing.T) {
	digits := func(symbol string) int32 {
		if symbol == "EURUSD" {
			return 5
		}
		return -1
	}
	z := dec.MustParse("0")
	for _, c := range []struct {
		fact events.Event
		want string
	}{
		{&events.DealAdded{Fact: events.Fact{Seq: 3, Login: 5001}, DealID: 901, OrderID: 900, PositionID: 900, Symbol: "EURUSD",
			Volume: dec.MustParse("1"), Price: dec.MustParse("1.10005"), Profit: z, Commission: dec.MustParse("-3.5"),
			Swap: z, Comment: "hi#M00001", Time: 1800000001000},
			`{"e":"DEAL","E":1800000001000,"L":5001,"d":901,"o":900,"P":900,"s":"EURUSD","S":"BUY","en":"IN","q":"1",` +
				`"p":"1.10005","rp":"0.0000","n":"-3.5000","sw":"0.0000","c":"hi#M00001","T":1800000001000}`},
		{&events.DealAdded{Fact: events.Fact{Login: 5001}, DealID: 902, Symbol: "NEW", Action: 1, Entry: 1, Volume: dec.MustParse("0.5"),
			Price: dec.MustParse("2.125"), Profit: dec.MustParse("12.3"), Time: 7},
			`{"e":"DEAL","E":7,"L":5001,"d":902,"o":0,"P":0,"s":"NEW","S":"SELL","en":"OUT","q":"0.5","p":"2.125",` +
				`"rp":"12.3000","n":"0.0000","sw":"0.0000","c":"","T":7}`},
		{&events.PositionChanged{Fact: events.Fact{Login: 5001}, Change: "NEW", PositionID: 900, Symbol: "EURUSD", Volume: dec.MustParse("1"),
			PriceOpen: dec.MustParse("1.1"), SL: z, TP: z, Profit: dec.MustParse("1.5"), Swap: z, Comment: "hi",
			TimeOpen: 1800000001000, Time: 1800000001000},
			`{"e":"POSITION_UPDATE","E":1800000001000,"L":5001,"x":"NEW","i":900,"s":"EURUSD","S":"BUY","q":"1",` +
				`"p":"1.10000","sl":"0","tp":"0","pr":"1.5000","sw":"0.0000","c":"hi","T":1800000001000}`},
		{&events.OrderChanged{Fact: events.Fact{Login: 5007}, Change: "NEW", OrderID: 951, Symbol: "EURUSD", Type: 2, State: 1,
			VolumeInitial: dec.MustParse("1"), VolumeCurrent: dec.MustParse("1"), Price: dec.MustParse("1.05"),
			StopLimitPrice: z, SL: dec.MustParse("1.04"), TP: z, TimeSetup: 1800000000000, Time: 1800000002000},
			`{"e":"ORDER_UPDATE","E":1800000002000,"L":5007,"x":"NEW","o":951,"s":"EURUSD","ot":"BUY_LIMIT","X":"NEW",` +
				`"mst":1,"q":"1","qr":"1","p":"1.05000","sp":"0","sl":"1.04000","tp":"0","tif":"GTC","ts":1800000000000,"ex":0}`},
		{&events.OrderChanged{Fact: events.Fact{Login: 5007}, Change: "DELETE", OrderID: 952, Symbol: "EURUSD", Type: 5, State: 6,
			VolumeInitial: dec.MustParse("1"), VolumeCurrent: dec.MustParse("1"), Price: dec.MustParse("1.2"),
			Expiration: 99, Time: 5},
			`{"e":"ORDER_UPDATE","E":5,"L":5007,"x":"DELETE","o":952,"s":"EURUSD","ot":"SELL_STOP","X":"EXPIRED",` +
				`"mst":6,"q":"1","qr":"1","p":"1.20000","sp":"0","sl":"0","tp":"0","tif":"GTD","ts":0,"ex":99}`},
		{&events.AccountChanged{Fact: events.Fact{Login: 5009}, Change: "UPDATE", Balance: dec.MustParse("10100.5"), Credit: z, Time: 1800000004000},
			`{"e":"ACCOUNT_UPDATE","E":1800000004000,"L":5009,"x":"UPDATE","b":"10100.5000","cr":"0.0000"}`},
	} {
		got, ok := userFrame(c.fact, digits)
		if !ok || string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.fact.EventType(), got, c.want)
		}
	}
	if _, ok := userFrame(&events.TickReceived{}, digits); ok {
		t.Error("a tick rendered as a user frame")
	}
}
