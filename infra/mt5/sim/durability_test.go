package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"tradesvc/infra/mt5"
)

func TestTornJournalTailIsDroppedAtOpen(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	r := h.mustCode(mt5.RetDone, market(1001, "BTCUSD", mt5.OrderBuy, "0.10"))
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
	h.mustCode(mt5.RetDone, closeReq(1001, r.Position, ""))
	h.reopen()
	if len(h.positions(1001)) != 0 || h.lastSeq() <= seq {
		t.Fatal("state after the second restart is wrong")
	}
}

func TestFsyncedJournalSurvivesRestartWithPendingOrdersStillTriggering(t *testing.T) {
	clock := &fakeClock{t: tuesdayNoon}
	dir := t.TempDir()
	s, err := Open(Config{DataDir: dir, Clock: clock, Sync: SyncBatch})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.SetQuote("BTCUSD", D("60000.00"), D("60010.00")); err != nil {
		t.Fatal(err)
	}
	req := pending(1002, "BTCUSD", mt5.OrderSellStop, "0.10", "59000.00")
	req.TypeTime, req.Expiration = mt5.TimeSpecified, tuesdayNoon.Add(time.Hour).UnixMilli()
	r, err := s.Send(ctx, req)
	if err != nil || r.Retcode != mt5.RetPlaced {
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
	if len(ps) != 1 || ps[0].Ticket != r.Order || ps[0].Type != mt5.PositionSell {
		t.Fatalf("the replayed order did not trigger: %+v", ps)
	}
}

func TestReplayedExpiryStillExpires(t *testing.T) {
	h := newHarness(t)
	h.quote("BTCUSD", "60000.00", "60010.00")
	req := pending(1001, "BTCUSD", mt5.OrderBuyLimit, "0.10", "50000.00")
	req.TypeTime, req.Expiration = mt5.TimeSpecified, tuesdayNoon.Add(time.Hour).UnixMilli()
	h.mustCode(mt5.RetPlaced, req)
	h.reopen()
	h.clock.Add(time.Hour)
	h.s.Housekeep()
	if len(h.openOrders(1001)) != 0 || h.history(1001)[0].State != mt5.StateExpired {
		t.Fatal("replayed order did not expire")
	}
}

func TestOldCursorsAreServedFromTheJournalFileBeyondTheWindow(t *testing.T) {
	s, err := Open(Config{DataDir: t.TempDir(), Clock: &fakeClock{t: tuesdayNoon}, FactWindow: 16, Sync: SyncNone})
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
