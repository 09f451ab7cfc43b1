package sim

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
	"tradesvc/events/trading"
	"tradesvc/infra/testenv"

	"tradesvc/infra/mt5"
)

func TestTornJournalTailIsDroppedAtOpen(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	r := h.mustCode(trading.RetDone, market(1001, "BTCUSD", trading.OrderBuy, "0.10"))
	seq := h.lastSeq()
	if err := h.s.Close(); err != nil {
		t.Fatal(err)
	}
	// a crash in the middle of writing the next batch leaves half a line
	f, err := os.OpenFile(filepath.Join(h.dir, "journal.log"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"f":{"Seq":99,"Kind":1,"Deal":{"Ticket":`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h.open()
	if h.lastSeq() != seq {
		t.Fatalf("seq %d after torn tail, want %d", h.lastSeq(), seq)
	}
	ps := h.positions(1001)
	if len(ps) != 1 || ps[0].Ticket != r.Position {
		t.Fatalf("positions %+v", ps)
	}
	// and the journal keeps working past the truncated tail
	h.quote("BTCUSD", "60000.00", "60010.00")
	h.mustCode(trading.RetDone, closeReq(1001, r.Position, ""))
	h.reopen()
	if len(h.positions(1001)) != 0 || h.lastSeq() <= seq {
		t.Fatal("state after the second restart is wrong")
	}
}

func TestFsyncedJournalSurvivesRestartWithPendingOrdersStillTriggering(t *testing.T) {
	clock := testenv.NewClock(tuesdayNoon)
	dir := t.TempDir()
	s, err := Open(Config{DataDir: dir, Clock: clock, Sync: SyncBatch})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.SetQuote("BTCUSD", D("60000.00"), D("60010.00")); err != nil {
		t.Fatal(err)
	}
	req := pending(1002, "BTCUSD", trading.OrderSellStop, "0.10", "59000.00")
	req.TypeTime, req.Expiration = trading.TimeSpecified, tuesdayNoon.Add(time.Hour).UnixMilli()
	r, err := s.Send(ctx, req)
	if err != nil || r.Retcode != trading.RetPlaced {
		t.Fatalf("%+v %v", r, err)
	}
	s.Close()
	s, err = Open(Config{DataDir: dir, Clock: clock, Sync: SyncBatch})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.SetQuote("BTCUSD", D("58990.00"), D("59000.00")); err != nil {
		t.Fatal(err)
	}
	ps, _ := s.Positions(ctx, 1002)
	if len(ps) != 1 || ps[0].Ticket != r.Order || ps[0].Type != trading.Sell {
		t.Fatalf("the replayed order did not trigger: %+v", ps)
	}
}

func TestReplayedExpiryStillExpires(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	req := pending(1001, "BTCUSD", trading.OrderBuyLimit, "0.10", "50000.00")
	req.TypeTime, req.Expiration = trading.TimeSpecified, tuesdayNoon.Add(time.Hour).UnixMilli()
	h.mustCode(trading.RetPlaced, req)
	h.reopen()
	h.clock.Add(time.Hour)
	h.housekeep()
	if len(h.openOrders(1001)) != 0 || h.history(1001)[0].State != trading.StateExpired {
		t.Fatal("replayed order did not expire")
	}
}

func TestOldCursorsAreServedFromTheJournalFileBeyondTheWindow(t *testing.T) {
	s, err := Open(Config{DataDir: t.TempDir(), Clock: testenv.NewClock(tuesdayNoon), FactWindow: 16, Sync: SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < 300; i++ {
		if _, err := s.Deposit(1001, D("1")); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, after := range []uint64{0, 255, 256, 257, 500, 590} {
		fs, err := s.Facts(ctx, after, 50)
		if err != nil {
			t.Fatal(err)
		}
		want := min(50, 600-int(after))
		if len(fs) != want || fs[0].Seq != after+1 || fs[len(fs)-1].Seq != after+uint64(want) {
			t.Fatalf("after %d: %d facts %d..%d", after, len(fs), fs[0].Seq, fs[len(fs)-1].Seq)
		}
		for i, f := range fs {
			if f.Seq != after+uint64(i)+1 || (f.Kind == mt5.FactDeal) != (f.Seq%2 == 1) {
				t.Fatalf("after %d: fact %d is %+v", after, i, f)
			}
		}
	}
}

func TestConcurrentSendersShareGroupCommitsAndFactsStayGapless(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Config{DataDir: dir, Clock: testenv.NewClock(tuesdayNoon), Sync: SyncBatch})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		go func(w int) {
			login := []int64{1001, 1002, 1003}[w%3]
			for i := 0; i < 20; i++ {
				r, err := s.Send(ctx, mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Symbol: "BTCUSD", Type: trading.OrderSell, Volume: D("0.01")})
				if err == nil && r.Retcode == trading.RetDone {
					r, err = s.Send(ctx, mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Position: r.Position})
				}
				if err != nil || r.Retcode != trading.RetDone {
					errs <- fmt.Errorf("worker %d: %v %v", w, r.Retcode, err)
					return
				}
			}
			errs <- nil
		}(w)
	}
	for w := 0; w < 16; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	want := s.lastSeq
	s.Close()
	s, err = Open(Config{DataDir: dir, Clock: testenv.NewClock(tuesdayNoon), Sync: SyncBatch})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fs, err := s.Facts(ctx, 0, 1<<20)
	if err != nil || uint64(len(fs)) != want {
		t.Fatalf("%d facts after restart, want %d (%v)", len(fs), want, err)
	}
	deals := map[int64]bool{}
	for i, f := range fs {
		if f.Seq != uint64(i+1) {
			t.Fatalf("gap at %d", i+1)
		}
		if f.Deal != nil {
			if deals[f.Deal.Ticket] {
				t.Fatalf("deal %d twice", f.Deal.Ticket)
			}
			deals[f.Deal.Ticket] = true
		}
	}
	if len(deals) != 16*20*2 {
		t.Fatalf("%d deals, want %d", len(deals), 16*20*2)
	}
}

func TestInstantExecutionRequotesAClose(t *testing.T) {
	h := newHarness(t)
	h.quote("LINKUSD", "15.000", "15.020")
	r := h.mustCode(trading.RetDone, market(1001, "LINKUSD", trading.OrderBuy, "1"))
	h.quote("LINKUSD", "14.900", "14.920")
	c := closeReq(1001, r.Position, "")
	c.Price, c.Deviation = D("15.000"), 50 // the client saw 15.000; the bid is 100 points away
	res := h.mustCode(trading.RetRequote, c)
	eqDec(t, "requote bid", res.Bid, "14.900")
	c.Price = D("14.900")
	h.mustCode(trading.RetDone, c)
}
