// Package relay is the trade server's feed into the log: its facts (deals, orders, positions,
// account balances), ticks and day statistics, symbols, server info and account snapshots,
// appended to Kafka from durable cursors. It executes nothing: the executor
// (command/executor) is the only sender of trade requests. One relay per trade server is
// active at a time, under a lease with a fencing token (lease.go); the others stand by.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"golang.org/x/sync/errgroup"

	"tradesvc/events"
	"tradesvc/infra/check"
	"tradesvc/infra/mt5"
	"tradesvc/infra/wait"
)

// Appender appends events to a topic of the log durably (acknowledged by all in-sync
// replicas) and in order per partition key, before it returns.
type Appender interface {
	Append(ctx context.Context, topic events.Topic, evs ...events.Event) error
}

// CursorStore keeps where a relay stands in a trade-server feed.
type CursorStore interface {
	Load(ctx context.Context, name string) (uint64, error)
	Save(ctx context.Context, name string, position uint64) error
}

// RelayConfig configures the relay.
type RelayConfig struct {
	// Batch is the most facts or ticks read and appended at once while the relay keeps up
	// (default 500). A read that fills it finds the relay behind: the next one reads twice as
	// many, up to MaxBatch (default 16 times Batch), so that a backlog drains in a few appends
	// and the relay is caught up again as soon as it is gone (OnFacts), not only once a
	// sustained flow slows below one Batch per append.
	Batch    int
	MaxBatch int
	// FactsPace is the least time between two appends of facts (default 25ms): the first
	// fact after a quiet spell is appended at once, and under a steady flow the facts of that
	// time go in one produce. The executor carries the facts its sends cause in band, so this
	// delays only what nothing else carries (SL/TP, stop-outs, deposits, a send's facts that
	// had no in-band answer), and takes one produce and one fetch of every consumer of the
	// trades topic per order off the broker.
	FactsPace time.Duration
	// AccountsEvery is how often account figures are polled and republished when they
	// changed (default 1s).
	AccountsEvery time.Duration
	// ReferenceEvery is how often symbols and server info are re-read (default 30s).
	ReferenceEvery time.Duration
	// StatsEvery is how often trading-day statistics are polled (default 1s).
	StatsEvery time.Duration
	// OnAppended, when set, is told of every batch appended from a feed (metrics).
	OnAppended func(feed string, n int, lastSeq uint64)
	// OnError, when set, is told of every failure of a relay loop (it is retried): the
	// executor's readiness shows the last one.
	OnError func(loop string, err error)
	// OnFacts, when set, is told after every step of the facts loop whether the relay has
	// appended every fact the trade server had (an idle poll, fewer facts than it asked for
	// appended) or not (a batch read and not appended yet, a full batch, a failure): the
	// intake report that user streams are held to (projections.ReportIntake).
	OnFacts func(caughtUp bool)
}

func (c *RelayConfig) defaults() {
	c.Batch = check.PositiveOr(c.Batch, 500)
	c.MaxBatch = max(check.PositiveOr(c.MaxBatch, 16*c.Batch), c.Batch)
	c.FactsPace = check.PositiveOr(c.FactsPace, 25*time.Millisecond)
	c.AccountsEvery = check.PositiveOr(c.AccountsEvery, time.Second)
	c.ReferenceEvery = check.PositiveOr(c.ReferenceEvery, 30*time.Second)
	c.StatsEvery = check.PositiveOr(c.StatsEvery, time.Second)
}

// Relay copies the trade server's feeds into the log: facts (deals, orders, positions,
// account balance changes) to the trades topic, ticks and day statistics to the ticks topic,
// symbols, server info and account snapshots to the reference topic. Facts are appended
// before their cursor is saved (at most every cursorSaveEvery), so a crash re-appends at most
// what was appended in that time; every fact carries its feed sequence so projections drop
// the duplicates.
type Relay struct {
	cfg     RelayConfig
	port    mt5.TradeServer
	out     Appender
	cursors CursorStore
	log     *slog.Logger
	now     func() time.Time

	lastSymbols  map[string]string
	lastServer   string
	lastAccounts map[int64]string
	lastStats    map[string]string
}

// NewRelay builds a relay.
func NewRelay(cfg RelayConfig, port mt5.TradeServer, out Appender, cursors CursorStore, log *slog.Logger, now func() time.Time) (*Relay, error) {
	if port == nil || out == nil || cursors == nil || log == nil || now == nil {
		return nil, errors.New("relay: needs a port, an appender, a cursor store, a logger and a clock")
	}
	cfg.defaults()
	return &Relay{cfg: cfg, port: port, out: out, cursors: cursors, log: log, now: now,
		lastSymbols: map[string]string{}, lastAccounts: map[int64]string{}, lastStats: map[string]string{}}, nil
}

// Cursor names in the cursor store.
const (
	CursorFacts = "mt5.facts"
	CursorTicks = "mt5.ticks"
)

// Run relays until ctx ends; each feed retries on its own after a failure, with backoff.
func (r *Relay) Run(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	loops := map[string]func(context.Context) error{"facts": r.relayFacts, "ticks": r.relayTicks,
		"reference": r.pollReference, "stats": r.pollStats}
	for name, loop := range loops {
		g.Go(func() error {
			r.forever(ctx, name, loop)
			return nil
		})
	}
	return g.Wait()
}

// forever runs loop again after each failure, at most a second later: the relay carries
// every quote and fact, so it must resume within a second of the broker or the trade server
// coming back (a retry is one request to each). An outage is logged at its first attempt
// and every tenth after; OnError hears of every one.
func (r *Relay) forever(ctx context.Context, name string, loop func(context.Context) error) {
	for attempt := 1; ctx.Err() == nil; attempt++ {
		err := loop(ctx)
		if ctx.Err() != nil {
			return
		}
		if attempt == 1 || attempt%10 == 0 {
			r.log.Warn("relay loop failed; retrying", "loop", name, "err", err, "attempt", attempt)
		}
		if r.cfg.OnError != nil {
			r.cfg.OnError(name, err)
		}
		_ = wait.For(ctx, min(time.Duration(attempt)*250*time.Millisecond, time.Second))
	}
}

// factsCaughtUp tells OnFacts.
func (r *Relay) factsCaughtUp(caughtUp bool) {
	if r.cfg.OnFacts != nil {
		r.cfg.OnFacts(caughtUp)
	}
}

func (r *Relay) relayFacts(ctx context.Context) (err error) {
	defer func() {
		if err != nil && ctx.Err() == nil {
			r.factsCaughtUp(false) // the facts the trade server has meanwhile are not relayed
		}
	}()
	// The cursor is saved behind the loop (the newest position wins): a deal on its way to a
	// RESULT wait never queues behind the previous batch's cursor commit. A crash then re-appends
	// at most the facts since the last save, which the projections drop by their seq.
	return relayFeed(ctx, r, feed[mt5.Fact]{cursor: CursorFacts, what: "facts", topic: events.TopicTrades(),
		pace: r.cfg.FactsPace, read: r.port.Facts, seq: func(f mt5.Fact) uint64 { return f.Seq }, caughtUp: r.factsCaughtUp,
		events: func(facts []mt5.Fact) []events.Event {
			evs := make([]events.Event, 0, len(facts))
			for _, f := range facts {
				if ev, ok := f.Event(); ok {
					evs = append(evs, ev)
				}
			}
			return evs
		}})
}

func (r *Relay) relayTicks(ctx context.Context) error {
	// Saved behind the loop too: a quote is not held back by the previous batch's commit. A
	// crash re-appends the ticks since the last save; the market projections drop a tick
	// whose feed sequence they have seen.
	return relayFeed(ctx, r, feed[mt5.Tick]{cursor: CursorTicks, what: "ticks", topic: events.TopicTicks(),
		read: r.port.Ticks, seq: func(t mt5.Tick) uint64 { return t.Seq }, caughtUp: func(bool) {},
		events: func(ticks []mt5.Tick) []events.Event {
			evs := make([]events.Event, len(ticks))
			for i, t := range ticks {
				evs[i] = tickEvent(t)
			}
			return evs
		}})
}

// feed is one of the trade server's feeds the relay copies into the log, in the order of its
// sequence, from the position its cursor saved.
type feed[T any] struct {
	cursor string
	what   string // for errors: "facts", "ticks"
	topic  events.Topic
	// pace is the least time between two appends (0: none).
	pace   time.Duration
	read   func(ctx context.Context, after uint64, max int) ([]T, error)
	events func([]T) []events.Event
	seq    func(T) uint64
	// caughtUp is told whether the relay has appended everything the feed had.
	caughtUp func(bool)
}

// relayFeed long-polls f and appends what it reads, saving its cursor behind the loop, until
// ctx ends or reading or appending fails.
func relayFeed[T any](ctx context.Context, r *Relay, f feed[T]) error {
	cursor, err := r.cursors.Load(ctx, f.cursor)
	if err != nil {
		return err
	}
	save, stop := r.saveBehind(ctx, f.cursor)
	defer stop()
	var appended time.Time
	batch := r.cfg.Batch // what the next read asks for: more while a backlog drains
	for {
		if err := wait.For(ctx, time.Until(appended.Add(f.pace))); err != nil {
			return err // (a first round, or no pace, waits for nothing)
		}
		pollCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		got, err := f.read(pollCtx, cursor, batch)
		cancel()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			f.caughtUp(true)
			continue // an idle long poll
		}
		if err != nil {
			return fmt.Errorf("read %s after %d: %w", f.what, cursor, err)
		}
		if len(got) == 0 {
			f.caughtUp(true)
			continue
		}
		f.caughtUp(false) // until they are appended
		evs := f.events(got)
		if err := r.out.Append(ctx, f.topic, evs...); err != nil {
			return fmt.Errorf("append %d %s: %w", len(evs), f.what, err)
		}
		appended = time.Now()
		cursor = f.seq(got[len(got)-1])
		r.appended(f.cursor, len(evs), cursor)
		full := len(got) >= batch
		f.caughtUp(!full)
		batch = r.cfg.Batch
		if full {
			batch = min(2*len(got), r.cfg.MaxBatch)
		}
		save(cursor)
	}
}

// saveBehind starts saving cursor name behind a relay loop: save hands over a position
// without waiting (a pending one is replaced by the newer), stop saves the last one handed
// over and returns.
func (r *Relay) saveBehind(ctx context.Context, name string) (save func(uint64), stop func()) {
	saves := make(chan uint64, 1)
	saved := make(chan struct{})
	go r.saveCursors(ctx, name, saves, saved)
	save = func(pos uint64) {
		select {
		case saves <- pos:
		default: // a save is pending: replace it with the newer position
			select {
			case <-saves:
			default:
			}
			saves <- pos
		}
	}
	return save, func() {
		close(saves)
		<-saved
	}
}

// cursorSaveEvery spaces a cursor's saves: one commit for all the batches relayed meanwhile
// (the newest position wins), instead of one per batch.
const cursorSaveEvery = 100 * time.Millisecond

// saveCursors saves each position sent on saves until it is closed (the last one with a
// short deadline of its own, so a stopping relay still records where it got to), at most
// every cursorSaveEvery.
func (r *Relay) saveCursors(ctx context.Context, name string, saves <-chan uint64, done chan<- struct{}) {
	defer close(done)
	var last time.Time
	for pos := range saves {
		if wait := cursorSaveEvery - time.Since(last); wait > 0 && ctx.Err() == nil {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
			}
			t.Stop()
			select { // a newer position handed over meanwhile replaces this one
			case newer, ok := <-saves:
				if ok {
					pos = newer
				}
			default:
			}
		}
		last = time.Now()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		err := r.cursors.Save(sctx, name, pos)
		cancel()
		if errors.Is(err, ErrFenced) {
			// Another relay took the lease over: it resumes from the last position saved.
			r.log.Info("relay cursor not saved: the lease was taken over", "cursor", name, "position", pos)
			continue
		}
		if err != nil {
			r.log.Warn("relay cursor not saved; a restart re-appends the facts since the last save", "cursor", name, "err", err)
			if r.cfg.OnError != nil {
				r.cfg.OnError(name, err)
			}
		}
	}
}

// pollReference publishes symbols and server info when they change (and once at start),
// and account snapshots whenever their figures change.
func (r *Relay) pollReference(ctx context.Context) error {
	var lastRef time.Time
	for {
		if lastRef.IsZero() || r.now().Sub(lastRef) >= r.cfg.ReferenceEvery {
			if err := r.publishSymbols(ctx); err != nil {
				return err
			}
			lastRef = r.now()
		}
		if err := r.publishAccounts(ctx); err != nil {
			return err
		}
		if wait.For(ctx, r.cfg.AccountsEvery) != nil {
			return ctx.Err()
		}
	}
}

func (r *Relay) publishSymbols(ctx context.Context) error {
	now := r.now().UnixMilli()
	info, err := r.port.ServerInfo(ctx)
	if err != nil {
		return fmt.Errorf("read server info: %w", err)
	}
	c := newChanges(r.lastSymbols)
	srv := &events.ServerSpecified{Name: info.Name, TimeZoneOffsetMinutes: info.TimeZoneOffsetMinutes, Time: now}
	serverFP := fingerprint(srv.Name, srv.TimeZoneOffsetMinutes)
	if serverFP != r.lastServer {
		c.evs = append(c.evs, srv)
	}
	symbols, err := r.port.Symbols(ctx)
	if err != nil {
		return fmt.Errorf("read symbols: %w", err)
	}
	for _, s := range symbols {
		e := symbolEvent(s, now)
		e.Time = 0
		if fp := fingerprint(e); c.differs(s.Name, fp) {
			e.Time = now
			c.add(s.Name, fp, e)
		}
	}
	if err := c.publish(ctx, r.out, events.TopicReference(), "reference data"); err != nil {
		return err
	}
	r.lastServer = serverFP
	return nil
}

func (r *Relay) publishAccounts(ctx context.Context) error {
	accounts, err := r.port.Accounts(ctx)
	if err != nil {
		return fmt.Errorf("read accounts: %w", err)
	}
	c := newChanges(r.lastAccounts)
	observed := r.now().UnixMilli()
	for _, a := range accounts {
		e := accountEvent(a)
		if fp := fingerprint(e); c.differs(a.Login, fp) { // ObservedAt is still zero: only the figures count
			e.ObservedAt = observed
			c.add(a.Login, fp, e)
		}
	}
	return c.publish(ctx, r.out, events.TopicReference(), "account snapshots")
}

func (r *Relay) pollStats(ctx context.Context) error {
	var names []string
	var listed time.Time
	for {
		// The symbol list changes rarely: re-read it at the reference interval, not each poll.
		if names == nil || r.now().Sub(listed) >= r.cfg.ReferenceEvery {
			symbols, err := r.port.Symbols(ctx)
			if err != nil {
				return fmt.Errorf("read symbols: %w", err)
			}
			names = make([]string, len(symbols))
			for i, s := range symbols {
				names[i] = s.Name
			}
			listed = r.now()
		}
		c := newChanges(r.lastStats)
		for _, name := range names {
			st, err := r.port.DayStats(ctx, name)
			if errors.Is(err, mt5.ErrNoQuote) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read day stats of %s: %w", name, err)
			}
			e := dayStatsEvent(st)
			t := e.Time
			e.Time = 0
			if fp := fingerprint(e); c.differs(name, fp) {
				e.Time = t
				c.add(name, fp, e)
			}
		}
		if err := c.publish(ctx, r.out, events.TopicTicks(), "day stats"); err != nil {
			return err
		}
		if wait.For(ctx, r.cfg.StatsEvery) != nil {
			return ctx.Err()
		}
	}
}

// changes collects the events whose fingerprint differs from the one last published for their
// key (a symbol, an account), and records the new fingerprints once they are appended: what
// did not change is not published again.
type changes[K comparable] struct {
	last map[K]string
	evs  []events.Event
	fps  map[K]string
}

func newChanges[K comparable](last map[K]string) *changes[K] {
	return &changes[K]{last: last, fps: map[K]string{}}
}

// differs reports whether fp is not what was last published for k.
func (c *changes[K]) differs(k K, fp string) bool { return c.last[k] != fp }

// add queues ev, which changes k to fingerprint fp.
func (c *changes[K]) add(k K, fp string, ev events.Event) {
	c.evs = append(c.evs, ev)
	c.fps[k] = fp
}

// publish appends the queued events (nothing when there are none), then records their
// fingerprints as the last published.
func (c *changes[K]) publish(ctx context.Context, out Appender, topic events.Topic, what string) error {
	if len(c.evs) == 0 {
		return nil
	}
	if err := out.Append(ctx, topic, c.evs...); err != nil {
		return fmt.Errorf("append %s: %w", what, err)
	}
	maps.Copy(c.last, c.fps)
	return nil
}

func (r *Relay) appended(feed string, n int, lastSeq uint64) {
	if r.cfg.OnAppended != nil {
		r.cfg.OnAppended(feed, n, lastSeq)
	}
}
