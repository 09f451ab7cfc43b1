package projections

import (
	"testing"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
)

func tick(seq uint64, symbol, bid string, timeMs int64) batch.Message {
	b := dec.MustParse(bid)
	return batch.Message{Event: &events.TickReceived{Seq: seq, Symbol: symbol, Bid: b, Ask: dec.Add(b, dec.MustParse("0.0001")), Time: timeMs}}
}

func TestMarketKeepsLatestQuoteAndIgnoresRedeliveredTicks(t *testing.T) {
	m := NewMarket(1000)
	m.Handle(tick(1, "EURUSD", "1.10000", 1000))
	m.Handle(tick(2, "EURUSD", "1.10010", 2000))
	m.Handle(tick(1, "EURUSD", "1.09000", 1000)) // redelivered: must not move the quote back
	q, ok := m.Quote("EURUSD")
	if !ok || dec.String(q.Bid) != "1.10010" {
		t.Fatalf("latest = %+v %v", q, ok)
	}
	if got := m.Ticks("EURUSD", 10); len(got) != 2 || dec.String(got[0].Bid) != "1.10000" {
		t.Fatalf("ticks = %+v", got)
	}
	if _, ok := m.Quote("eurusd"); ok {
		t.Fatal("symbols are case-sensitive")
	}
}

func TestMarketTickBufferHoldsOnlyTicksSinceStartNewestLast(t *testing.T) {
	m := NewMarket(5000)
	m.Handle(tick(1, "BTCUSD", "60000.00", 4000)) // before start: warms the quote only
	for i := uint64(2); i <= TickBufferSize+11; i++ {
		m.Handle(tick(i, "BTCUSD", "60000.00", 5000+int64(i)))
	}
	all := m.Ticks("BTCUSD", 5000)
	if len(all) != TickBufferSize {
		t.Fatalf("buffer holds %d, want %d", len(all), TickBufferSize)
	}
	if all[len(all)-1].Time != 5000+TickBufferSize+11 || all[0].Time != 5000+12 {
		t.Fatalf("order wrong: first %d last %d", all[0].Time, all[len(all)-1].Time)
	}
	if got := m.Ticks("BTCUSD", 3); len(got) != 3 || got[2].Time != all[len(all)-1].Time {
		t.Fatalf("limit: %+v", got)
	}
	if got := m.Ticks("NOPE", 3); got == nil || len(got) != 0 {
		t.Fatal("unknown symbol must give an empty, non-nil slice")
	}
}
