package relay_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5/relay"
	"tradesvc/infra/mt5/sim"
	"tradesvc/infra/testenv"
)

// paceAppender records when each append of the trades topic came and the feed sequences it
// carried (the relay's other topics are not recorded).
type paceAppender struct {
	mu      sync.Mutex
	appends []paceAppend
}

type paceAppend struct {
	at   time.Time
	seqs []uint64
}

func (a *paceAppender) Append(_ context.Context, topic events.Topic, evs ...events.Event) error {
	if topic.Name != events.TopicTrades().Name {
		return nil
	}
	var seqs []uint64
	for _, ev := range evs {
		if seq, ok := riSeq(ev); ok {
			seqs = append(seqs, seq)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.appends = append(a.appends, paceAppend{at: time.Now(), seqs: seqs})
	return nil
}

func (a *paceAppender) snapshot() []paceAppend {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]paceAppend(nil), a.appends...)
}

// waitSeq waits until an append carried seq and returns the appends so far.
func (a *paceAppender) waitSeq(t *testing.T, seq uint64) []paceAppend {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		got := a.snapshot()
		for _, ap := range got {
			for _, s := range ap.seqs {
				if s == seq {
					return got
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("fact %d was never appended; appends: %+v", seq, a.snapshot())
	return nil
}

// memCursors is a cursor store in memory.
type memCursors struct {
	mu  sync.Mutex
	pos map[string]uint64
}

func (c *memCursors) Load(context.Context, string) (uint64, error) { return 0, nil }
func (c *memCursors) Save(_ context.Context, name string, position uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pos[name] = position
	return nil
}

// paceSim opens a simulator for a pacing test and a context that bounds the test.
func paceSim(t *testing.T) (*sim.Sim, context.Context) {
	t.Helper()
	s, err := sim.Open(sim.Config{DataDir: t.TempDir(), Clock: testenv.NewClock(riTuesdayNoon), RNGSeed: 11,
		Sync: sim.SyncNone, Logger: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return s, ctx
}

// The first fact after a quiet spell is appended at once; facts that follow within FactsPace
// wait for the pace and then go in one append; no two appends of facts are closer than the
// pace, and every fact is appended once, in order.
func TestRelayPacesFactsButNotTheFirstAfterAQuietSpell(t *testing.T) {
	s, ctx := paceSim(t)
	const pace = 600 * time.Millisecond
	out := &paceAppender{}
	r, err := relay.NewRelay(relay.RelayConfig{FactsPace: pace, AccountsEvery: time.Hour, ReferenceEvery: time.Hour,
		StatsEvery: time.Hour}, s, out, &memCursors{pos: map[string]uint64{}}, testenv.Logger(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Background(t, ctx, 10*time.Second, r.Run)

	send := func() {
		t.Helper()
		res, err := s.Send(ctx, riMarket(1001, "EURUSD", trading.OrderBuy, "0.10"))
		if err != nil || res.Retcode != trading.RetDone {
			t.Fatalf("send: %v, retcode %d", err, res.Retcode)
		}
	}

	// A quiet relay: the first fact goes out well inside the pace.
	sent := time.Now()
	send()
	got := out.waitSeq(t, 1)
	if took := got[0].at.Sub(sent); took >= pace/2 {
		t.Fatalf("the first fact after a quiet spell took %v to be appended; want it at once (pace %v)", took, pace)
	}
	// A flow: three more orders right behind it wait for the pace.
	for range 3 {
		send()
	}
	fs := allFacts(ctx, s)
	last := fs[len(fs)-1].Seq
	got = out.waitSeq(t, last)
	for i := 1; i < len(got); i++ {
		if gap := got[i].at.Sub(got[i-1].at); gap < pace {
			t.Fatalf("appends %d and %d of facts came %v apart; want at least the pace %v", i-1, i, gap, pace)
		}
	}
	if len(got) > 3 {
		t.Fatalf("%d appends for 4 orders sent back to back: %+v; want the first fact's, then what the pace gathered", len(got), got)
	}
	var next uint64 = 1
	for _, ap := range got {
		for _, seq := range ap.seqs {
			if seq != next {
				t.Fatalf("appended fact %d where %d was next: %+v", seq, next, got)
			}
			next++
		}
	}
	if next != last+1 {
		t.Fatalf("appended facts 1..%d; want 1..%d", next-1, last)
	}
}

// A backlog larger than Batch (the relay was stopped, or fell behind) is read in growing
// batches, twice the last full one up to MaxBatch, so that it drains in a few appends; the
// relay reports itself behind after each full read and caught up once a read finds fewer
// facts than it asked for.
func TestRelayDrainsABacklogInGrowingBatches(t *testing.T) {
	s, ctx := paceSim(t)
	for range 40 {
		res, err := s.Send(ctx, riMarket(1001, "EURUSD", trading.OrderBuy, "0.10"))
		if err != nil || res.Retcode != trading.RetDone {
			t.Fatalf("send: %v, retcode %d", err, res.Retcode)
		}
	}
	fs := allFacts(ctx, s)
	last := fs[len(fs)-1].Seq
	const batch, maxBatch = 10, 40
	var mu sync.Mutex
	var ends []uint64   // the last fact of each append
	var caughtUp []bool // what each step reported after its append
	appending := false  // a batch was read and not appended yet
	r, err := relay.NewRelay(relay.RelayConfig{Batch: batch, MaxBatch: maxBatch, FactsPace: time.Millisecond,
		AccountsEvery: time.Hour, ReferenceEvery: time.Hour, StatsEvery: time.Hour,
		OnAppended: func(feed string, _ int, lastSeq uint64) {
			if feed == relay.CursorFacts {
				mu.Lock()
				ends, appending = append(ends, lastSeq), true
				mu.Unlock()
			}
		},
		OnFacts: func(ok bool) {
			mu.Lock()
			if appending {
				caughtUp, appending = append(caughtUp, ok), false
			}
			mu.Unlock()
		}}, s, &paceAppender{}, &memCursors{pos: map[string]uint64{}}, testenv.Logger(), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	testenv.Background(t, ctx, 10*time.Second, r.Run)
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		done := len(ends) > 0 && ends[len(ends)-1] == last && len(caughtUp) == len(ends)
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backlog of %d facts was not appended: appends ending at %v", last, ends)
		}
		time.Sleep(5 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	// What each read should have asked for and found, from a backlog of last facts.
	var want []uint64
	var wantCaughtUp []bool
	ask, at := uint64(batch), uint64(0)
	for at < last {
		got := min(ask, last-at)
		at += got
		want, wantCaughtUp = append(want, at), append(wantCaughtUp, got < ask)
		if got == ask {
			ask = min(2*ask, maxBatch)
		}
	}
	if len(want) < 4 {
		t.Fatalf("a backlog of %d facts is too small to see the batches grow", last)
	}
	if !slices.Equal(ends, want) {
		t.Fatalf("appends ended at facts %v; want %v (reads of 10, 20, then 40 at most)", ends, want)
	}
	if !slices.Equal(caughtUp, wantCaughtUp) {
		t.Fatalf("after each append the relay reported caught up %v; want %v", caughtUp, wantCaughtUp)
	}
}
