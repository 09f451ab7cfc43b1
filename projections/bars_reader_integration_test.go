package projections

import (
	"context"
	"testing"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
)

// LatestDayBars gives a starting gateway each symbol's stored bars of the UTC day of its
// newest bar (not older days), newest last, with the sequence of the newest tick they count:
// what the kline streams resume from (issue 17, item 8).
func TestLatestDayBarsAreTheNewestDayOfEachSymbol(t *testing.T) {
	ctx := context.Background()
	conn := testenv.MigratedCH(t)
	h, err := NewMarketHistory(conn)
	if err != nil {
		t.Fatal(err)
	}
	const day = 1_800_000_000_000 - 1_800_000_000_000%86_400_000
	tick := func(seq uint64, sym, bid string, at int64) batch.Message {
		b := dec.MustParse(bid)
		return batch.Message{Event: &events.TickReceived{Seq: seq, Symbol: sym, Bid: b, Ask: dec.Add(b, dec.MustParse("1")),
			Last: b, Time: at}}
	}
	if err := h.Apply(ctx, []batch.Message{
		tick(1, "BTCUSD", "90.00", day-30_000), // yesterday: not part of today's bars
		tick(2, "BTCUSD", "100.00", day+5_000),
		tick(3, "ETHUSD", "10.00", day+6_000),
		tick(4, "BTCUSD", "101.00", day+65_000),
		tick(5, "BTCUSD", "102.00", day+66_000),
	}); err != nil {
		t.Fatal(err)
	}
	r, _ := NewHistoryReader(conn)
	got, err := r.LatestDayBars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Symbol != "BTCUSD" || got[1].Symbol != "ETHUSD" {
		t.Fatalf("%+v", got)
	}
	btc := got[0]
	if btc.Seq != 5 || len(btc.Bars) != 2 || btc.Bars[0].OpenTime != day || btc.Bars[1].OpenTime != day+60_000 ||
		btc.Bars[1].Count != 2 || dec.String(btc.Bars[1].Close) != "102.00000000" {
		t.Fatalf("BTCUSD %+v", btc)
	}
	if eth := got[1]; eth.Seq != 3 || len(eth.Bars) != 1 || eth.Bars[0].Count != 1 {
		t.Fatalf("ETHUSD %+v", eth)
	}
}
