package relay_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/kafkatest"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/relay"
	"tradesvc/infra/testenv"
)

// takeoverBound is issue 17's promise: a standby relays within 10 s of the active relay's death.
const takeoverBound = 10 * time.Second

// leasedRelay is one relay process of a test: a relay under the lease, appending as its owner.
type leasedRelay struct {
	owner  string
	stop   func()
	mu     sync.Mutex
	states []relay.LeaseState
	active chan struct{} // closed at the first term
}

func (l *leasedRelay) last() relay.LeaseState {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.states) == 0 {
		return relay.LeaseState{}
	}
	return l.states[len(l.states)-1]
}

// startLeased runs a relay named owner under the lease in store, reading port; running
// counts the relays relaying at once (the test fails if it ever exceeds one; nil: not counted). frozen, when
// set, freezes the whole relay: its reads, renewals and appends.
func (e *riEnv) startLeased(owner string, store relay.LeaseStore, port mt5.TradeServer, running *atomic.Int32, frozen *pausable) *leasedRelay {
	e.t.Helper()
	out, err := kafka.NewAppender(e.pub, owner, time.Now)
	if err != nil {
		e.t.Fatal(err)
	}
	l := &leasedRelay{owner: owner, active: make(chan struct{})}
	var once sync.Once
	cfg := relay.LeaseConfig{Name: relay.LeaseName, Owner: owner, Logger: testenv.Logger(), OnState: func(s relay.LeaseState) {
		l.mu.Lock()
		l.states = append(l.states, s)
		l.mu.Unlock()
		if s.Active {
			once.Do(func() { close(l.active) })
		}
	}}
	l.stop = testenv.Background(e.t, e.ctx, 15*time.Second, func(ctx context.Context) error {
		return relay.RunLeased(ctx, cfg, store, func(ctx context.Context, term *relay.Term) error {
			if running != nil {
				if n := running.Add(1); n > 1 {
					e.t.Errorf("%s relays while %d other relay(s) do", owner, n-1)
				}
				defer running.Add(-1)
			}
			var app relay.Appender = term.Appender(out)
			if frozen != nil {
				app = heldAppender{out: app, p: frozen}
			}
			r, err := relay.NewRelay(e.cfg, port, app, term.Cursors(e.cursors), testenv.Logger(), time.Now)
			if err != nil {
				return err
			}
			return r.Run(ctx)
		})
	})
	return l
}

func (l *leasedRelay) waitActive(t *testing.T, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-l.active:
		return time.Since(start)
	case <-time.After(within):
		t.Fatalf("relay %s not active within %v (last state %+v)", l.owner, within, l.last())
		return 0
	}
}

// killed is the lease of a process killed with SIGKILL: it never releases what it holds.
type killed struct{ relay.LeaseStore }

func (killed) Release(context.Context, string, int64) error { return nil }

func (e *riEnv) lease() *relay.PGLease {
	e.t.Helper()
	l, err := relay.NewPGLease(e.pool, relay.LeaseName)
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

// producers counts the trade facts of each sequence number and who appended them.
func producers(recs []kafkatest.Record) (perSeq map[uint64]int, by map[string]int) {
	perSeq, by = map[uint64]int{}, map[string]int{}
	for _, r := range recs {
		if s, ok := riSeq(r.Event); ok {
			perSeq[s]++
			by[r.Env.Producer]++
		}
	}
	return perSeq, by
}

// Two relays share one trade server: one relays, the other stands by naming it; nothing is
// appended twice. The active one dies without releasing the lease (as under kill -9): the
// standby relays within 10 s, from the dead one's cursor, and no fact is lost or doubled.
func TestLeaseOneRelayActiveAndAStandbyTakesOverWithin10sOfItsDeath(t *testing.T) {
	e := riSetup(t)
	trades := kafkatest.Follow(t, e.ctx, e.brokers, e.kcfg, events.TopicTrades())
	var running atomic.Int32
	a := e.startLeased("relay-A", killed{e.lease()}, e.sim, &running, nil)
	a.waitActive(t, 5*time.Second)
	b := e.startLeased("relay-B", e.lease(), e.sim, &running, nil)
	apptestEventually(t, 5*time.Second, "relay-B standing by, naming relay-A", func() bool {
		s := b.last()
		return !s.Active && s.Holder.Owner == "relay-A" && s.Holder.Live && s.Err == nil
	})
	for i := range 3 {
		e.deposit(1001, fmt.Sprintf("%d.25", 10+i))
	}
	n := uint64(len(e.simFacts()))
	recs := trades.WaitFor(15*time.Second, "the first facts", func(r []kafkatest.Record) bool { return riHasAll(riFactSeqs(r), n) })
	if _, by := producers(recs); by["relay-B"] != 0 || by["relay-A"] != int(n) {
		t.Fatalf("facts by producer %v, want all %d by relay-A", by, n)
	}

	a.stop() // dies holding the lease
	died := time.Now()
	e.deposit(1002, "33.50") // while no relay runs
	took := b.waitActive(t, takeoverBound)
	t.Logf("relay-B took over %v after relay-A died (lease TTL 5s, poll 1s)", time.Since(died).Round(time.Millisecond))
	if took > takeoverBound {
		t.Fatalf("takeover took %v", took)
	}
	e.deposit(1003, "44.75")
	total := uint64(len(e.simFacts()))
	recs = trades.WaitFor(15*time.Second, "every fact after the takeover", func(r []kafkatest.Record) bool {
		return riHasAll(riFactSeqs(r), total)
	})
	time.Sleep(300 * time.Millisecond) // a copy, if any, would land now
	perSeq, by := producers(trades.Snapshot())
	for s := uint64(1); s <= total; s++ {
		if perSeq[s] != 1 {
			t.Errorf("fact %d appended %d times, want once", s, perSeq[s])
		}
	}
	if by["relay-B"] != int(total-n) {
		t.Errorf("facts by producer %v: want relay-B to append the %d facts since relay-A died", by, total-n)
	}
	_ = recs
}

// pausable is a trade server seen by a process that is frozen (SIGSTOP, a long GC pause, a
// suspended VM): while paused, no call returns; calls in flight return only once resumed.
type pausable struct {
	mt5.TradeServer
	mu     sync.Mutex
	resume chan struct{} // nil while running
}

func (p *pausable) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.resume = make(chan struct{})
}

func (p *pausable) unpause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	close(p.resume)
	p.resume = nil
}

func (p *pausable) hold() {
	p.mu.Lock()
	ch := p.resume
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func held[T any](p *pausable, f func() (T, error)) (T, error) {
	p.hold()
	v, err := f()
	p.hold()
	return v, err
}

func (p *pausable) Facts(ctx context.Context, after uint64, n int) ([]mt5.Fact, error) {
	return held(p, func() ([]mt5.Fact, error) { return p.TradeServer.Facts(ctx, after, n) })
}

func (p *pausable) Ticks(ctx context.Context, after uint64, n int) ([]mt5.Tick, error) {
	return held(p, func() ([]mt5.Tick, error) { return p.TradeServer.Ticks(ctx, after, n) })
}

func (p *pausable) ServerInfo(ctx context.Context) (mt5.ServerInfo, error) {
	return held(p, func() (mt5.ServerInfo, error) { return p.TradeServer.ServerInfo(ctx) })
}

func (p *pausable) Symbols(ctx context.Context) ([]mt5.Symbol, error) {
	return held(p, func() ([]mt5.Symbol, error) { return p.TradeServer.Symbols(ctx) })
}

func (p *pausable) Accounts(ctx context.Context) ([]mt5.Account, error) {
	return held(p, func() ([]mt5.Account, error) { return p.TradeServer.Accounts(ctx) })
}

func (p *pausable) DayStats(ctx context.Context, s string) (mt5.DayStats, error) {
	return held(p, func() (mt5.DayStats, error) { return p.TradeServer.DayStats(ctx, s) })
}

// heldAppender is a frozen process's appends: one that starts while frozen waits for the
// thaw (before the term's check, which then runs when the process runs again).
type heldAppender struct {
	out relay.Appender
	p   *pausable
}

func (h heldAppender) Append(ctx context.Context, topic events.Topic, evs ...events.Event) error {
	h.p.hold()
	return h.out.Append(ctx, topic, evs...)
}

// pausedLease is the same process's lease: a paused process renews nothing.
type pausedLease struct {
	relay.LeaseStore
	p *pausable
}

func (l pausedLease) Renew(ctx context.Context, owner string, token int64, ttl time.Duration) (bool, error) {
	return held(l.p, func() (bool, error) { return l.LeaseStore.Renew(ctx, owner, token, ttl) })
}

// The active relay is frozen mid-work (its reads and renewals stuck) for longer than its
// lease: the standby takes over within 10 s and relays what happened meanwhile. When the old
// owner wakes, with facts in hand it read before or during its pause, it appends none of them
// (its term expired) and goes back to standing by, naming the new owner.
func TestLeasePausedRelayAppendsNothingOnceAStandbyTookOver(t *testing.T) {
	e := riSetup(t)
	trades := kafkatest.Follow(t, e.ctx, e.brokers, e.kcfg, events.TopicTrades())
	reference := kafkatest.Follow(t, e.ctx, e.brokers, e.kcfg, events.TopicReference())
	ticks := kafkatest.Follow(t, e.ctx, e.brokers, e.kcfg, events.TopicTicks())
	// No count of running relays here: a frozen relay is inside its term and relays nothing.
	frozen := &pausable{TradeServer: e.sim}
	a := e.startLeased("relay-A", pausedLease{LeaseStore: e.lease(), p: frozen}, frozen, nil, frozen)
	a.waitActive(t, 5*time.Second)
	e.deposit(1001, "12.00")
	n := uint64(len(e.simFacts()))
	trades.WaitFor(15*time.Second, "the first facts", func(r []kafkatest.Record) bool { return riHasAll(riFactSeqs(r), n) })

	frozen.pause()
	paused := time.Now()
	b := e.startLeased("relay-B", e.lease(), e.sim, nil, nil)
	e.deposit(1002, "21.00") // relay-A's facts loop holds this fact, returned once it wakes
	b.waitActive(t, takeoverBound)
	t.Logf("relay-B took over %v after relay-A froze", time.Since(paused).Round(time.Millisecond))
	if time.Since(paused) > takeoverBound {
		t.Fatalf("takeover %v after the pause, want within %v", time.Since(paused), takeoverBound)
	}
	frozen.unpause()
	e.deposit(1003, "31.00")
	total := uint64(len(e.simFacts()))
	trades.WaitFor(15*time.Second, "every fact", func(r []kafkatest.Record) bool { return riHasAll(riFactSeqs(r), total) })
	apptestEventually(t, 10*time.Second, "relay-A standing by, naming relay-B", func() bool {
		s := a.last()
		return !s.Active && s.Holder.Owner == "relay-B"
	})
	time.Sleep(time.Second) // whatever relay-A would still append lands now
	// An envelope is stamped when it is wrapped, just before its append: anything relay-A
	// stamped after it froze is an append of a relay whose lease had been taken over.
	frozenAt := paused.UnixMilli()
	for name, r := range map[string]*kafkatest.Reader{"trades": trades, "reference": reference, "ticks": ticks} {
		late, before := 0, 0
		for _, rec := range r.Snapshot() {
			switch {
			case rec.Env.Producer != "relay-A":
			case rec.Env.OccurredAt > frozenAt:
				late++
			default:
				before++
			}
		}
		if late != 0 {
			t.Errorf("%s: relay-A appended %d record(s) after it froze (and %d before)", name, late, before)
		}
	}
	perSeq, _ := producers(trades.Snapshot())
	for s := uint64(1); s <= total; s++ {
		if perSeq[s] != 1 {
			t.Errorf("fact %d appended %d times, want once", s, perSeq[s])
		}
	}
}

// A cursor is saved only under the lease's current token: once another relay took the lease
// over, the old token's save is refused (ErrFenced) and the cursor keeps the new owner's
// position; Acquire refuses a live lease of another owner and reports it.
func TestFencedCursorSaveIsRefusedOnceTheLeaseWasTakenOver(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	lease, err := relay.NewPGLease(pool, relay.LeaseName)
	if err != nil {
		t.Fatal(err)
	}
	cursors, err := relay.NewPGCursors(pool)
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 400 * time.Millisecond
	oldTok, ok, err := lease.Acquire(ctx, "old", ttl)
	if err != nil || !ok {
		t.Fatalf("acquire a free lease: %v %v", ok, err)
	}
	if _, ok, err := lease.Acquire(ctx, "new", ttl); err != nil || ok {
		t.Fatalf("acquired a live lease of another owner: %v %v", ok, err)
	}
	if h, err := lease.Holder(ctx); err != nil || h.Owner != "old" || h.Token != oldTok || !h.Live {
		t.Fatalf("holder %+v %v", h, err)
	}
	if err := cursors.FencedSave(ctx, relay.LeaseName, oldTok, relay.CursorFacts, 10); err != nil {
		t.Fatal(err)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	newTok, ok, err := lease.Acquire(ctx, "new", ttl)
	if err != nil || !ok || newTok <= oldTok {
		t.Fatalf("take over an expired lease: token %d (old %d) %v %v", newTok, oldTok, ok, err)
	}
	if err := cursors.FencedSave(ctx, relay.LeaseName, newTok, relay.CursorFacts, 12); err != nil {
		t.Fatal(err)
	}
	err = cursors.FencedSave(ctx, relay.LeaseName, oldTok, relay.CursorFacts, 50)
	if !errors.Is(err, relay.ErrFenced) {
		t.Fatalf("save under the old token: %v, want ErrFenced", err)
	}
	if ok, err := lease.Renew(ctx, "old", oldTok, ttl); err != nil || ok {
		t.Fatalf("the old owner renewed a lease taken over: %v %v", ok, err)
	}
	if pos, err := cursors.Load(ctx, relay.CursorFacts); err != nil || pos != 12 {
		t.Fatalf("cursor %d %v, want the new owner's 12", pos, err)
	}
	// Released: free at once for anyone.
	if err := lease.Release(ctx, "new", newTok); err != nil {
		t.Fatal(err)
	}
	if tok, ok, err := lease.Acquire(ctx, "third", time.Minute); err != nil || !ok || tok != newTok+1 {
		t.Fatalf("acquire a released lease: %d %v %v", tok, ok, err)
	}
}

func apptestEventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
