package projections

import (
	"testing"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
	"tradesvc/query"
)

func TestMarketListenerHearsEachNewTickOnceAndNewerDayStats(t *testing.T) {
	m := NewMarket(0)
	var ticks []query.Quote
	var stats []query.DayStats
	m.OnApplied(func(q query.Quote) { ticks = append(ticks, q) }, func(s query.DayStats) { stats = append(stats, s) })
	m.Handle(tick(1, "EURUSD", "1.10000", 1000))
	m.Handle(tick(2, "EURUSD", "1.10010", 2000))
	m.Handle(tick(1, "EURUSD", "1.09000", 1000)) // redelivered: not applied, not heard
	if len(ticks) != 2 || dec.String(ticks[1].Bid) != "1.10010" || ticks[1].Time != 2000 {
		t.Fatalf("listener heard %+v, want the two new ticks in order", ticks)
	}
	m.Handle(batch.Message{Event: &events.DayStatsUpdated{Symbol: "EURUSD", Time: 5000}})
	m.Handle(batch.Message{Event: &events.DayStatsUpdated{Symbol: "EURUSD", Time: 4000}}) // older: ignored
	if len(stats) != 1 || stats[0].Time != 5000 {
		t.Fatalf("listener heard stats %+v, want only the newer one", stats)
	}
}
