package sim

import (
	"context"
	"errors"
	"testing"
	"time"
	"tradesvc/events/trading"
	"tradesvc/infra/testenv"

	"tradesvc/infra/mt5"
)

func TestTickRingResumesAtItsOldestTickWhenTheCursorFellBehind(t *testing.T) {
	s, err := Open(Config{DataDir: t.TempDir(), Clock: testenv.NewClock(tuesdayNoon), TickBuffer: 64, Sync: SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 100; i++ {
		if err := s.PushTick("BTCUSD", fromPoints(s.symbols["BTCUSD"], int64(6000000+i)), fromPoints(s.symbols["BTCUSD"], int64(6001000+i))); err != nil {
			t.Fatal(err)
		}
	}
	last := s.ticks.last
	ts, err := s.Ticks(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 64 || ts[0].Seq != last-63 || ts[63].Seq != last {
		t.Fatalf("got %d ticks %d..%d, want the newest 64 ending at %d", len(ts), ts[0].Seq, ts[len(ts)-1].Seq, last)
	}
	eqDec(t, "newest bid", ts[63].Bid, "60000.99")
	if ts[63].BidDirection != 1 || ts[63].Volume != 1 {
		t.Fatalf("tick %+v", ts[63])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.Ticks(ctx, last, 10); err != context.DeadlineExceeded {
		t.Fatalf("a caught-up reader must block until its context ends: %v", err)
	}
}

func TestQuoteGeneratorIsDeterministicForASeed(t *testing.T) {
	run := func() []mt5.Tick {
		s, err := Open(Config{DataDir: t.TempDir(), Clock: testenv.NewClock(tuesdayNoon), RNGSeed: 99, Sync: SyncNone})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if err := s.SetQuote("EURUSD", D("1.08500"), D("1.08510")); err != nil {
			t.Fatal(err)
		}
		s.GenerateTicks(20)
		ts, _ := s.Ticks(context.Background(), 0, 100000)
		return ts
	}
	a, b := run(), run()
	if len(a) != len(b) || len(a) < 20*15 {
		t.Fatalf("tick counts %d %d", len(a), len(b))
	}
	for i := range a {
		if a[i].Symbol != b[i].Symbol || a[i].Bid.Cmp(&b[i].Bid) != 0 || a[i].Ask.Cmp(&b[i].Ask) != 0 {
			t.Fatalf("tick %d differs: %+v %+v", i, a[i], b[i])
		}
		if a[i].Symbol == "EURUSD" && i > 30 {
			t.Fatal("a held symbol was moved by the generator")
		}
		if a[i].Bid.Cmp(&a[i].Ask) >= 0 {
			t.Fatalf("crossed quote %+v", a[i])
		}
		if a[i].Symbol == "USDRUB" && i >= 20 { // past the opening quotes of every symbol
			t.Fatal("a closed symbol ticked")
		}
	}
}

func TestDayStatsFollowTheTradingDay(t *testing.T) {
	h := newHarness(t)
	h.clock.Set(serverTime(2026, 11, 18, 0, 1)) // a new server day
	h.quote("BTCUSD", "60000.00", "60010.00")
	h.quote("BTCUSD", "61000.00", "61010.00")
	h.quote("BTCUSD", "59500.00", "59510.00")
	h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	h.mustCode(trading.RetDone, market(1002, "BTCUSD", trading.OrderSell, "0.20"))
	h.quote("BTCUSD", "60300.00", "60310.00")
	st, err := h.s.DayStats(h.ctx, "BTCUSD")
	if err != nil {
		t.Fatal(err)
	}
	eqDec(t, "open", st.Open, "60000.00")
	eqDec(t, "high", st.High, "61000.00")
	eqDec(t, "low", st.Low, "59500.00")
	eqDec(t, "last", st.Last, "60300.00")
	eqDec(t, "ask high", st.AskHigh, "61010.00")
	eqDec(t, "change", st.PriceChange, "300.00")
	eqDec(t, "change %", st.PriceChangePercent, "0.50")
	eqDec(t, "volatility", st.Volatility, "2.52")
	eqDec(t, "volume", st.Volume, "0.30")
	if st.Deals != 2 || st.BuyOrders != 1 || st.SellOrders != 1 {
		t.Fatalf("counters %+v", st)
	}
	h.clock.Set(serverTime(2026, 11, 19, 0, 1))
	h.quote("BTCUSD", "60400.00", "60410.00")
	st, _ = h.s.DayStats(h.ctx, "BTCUSD")
	eqDec(t, "open of the next day", st.Open, "60400.00")
	if st.Deals != 0 {
		t.Fatal("counters not reset")
	}
}

func TestFeedCursorsAcrossRestarts(t *testing.T) {
	h := newHarness(t)
	if _, err := h.s.Deposit(1001, D("1")); err != nil {
		t.Fatal(err)
	}
	lastTick := h.s.ticks.last
	h.reopen()
	// tick sequences keep increasing across a restart
	if err := h.s.PushTick("BTCUSD", D("60000.00"), D("60010.00")); err != nil {
		t.Fatal(err)
	}
	ts, err := h.s.Ticks(h.ctx, lastTick, 1000)
	if err != nil || len(ts) == 0 || ts[0].Seq <= lastTick {
		t.Fatalf("ticks after restart: %v %v", ts, err)
	}
	// a tick cursor from the future (the feed was reset) starts over instead of waiting
	ts, err = h.s.Ticks(h.ctx, h.s.ticks.last+1000, 5)
	if err != nil || len(ts) != 5 {
		t.Fatalf("ticks from a future cursor: %d %v", len(ts), err)
	}
	// a fact cursor from the future is an error, never a silent wait
	if _, err := h.s.Facts(h.ctx, h.lastSeq()+5, 10); !errors.Is(err, mt5.ErrCursorAhead) {
		t.Fatalf("facts from a future cursor: %v", err)
	}
}
