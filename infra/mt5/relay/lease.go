package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"tradesvc/events"
	"tradesvc/infra/check"
	"tradesvc/infra/wait"
)

// One relay per trade server is active; the others stand by. Two active relays would append
// every fact and tick twice and race one cursor, so activity is a lease the code checks, not
// a deployment rule: a relay relays only during a term, which starts when it takes the lease
// (with a new fencing token) and ends when it cannot renew it in time or finds it taken over.
// Within a term:
//   - every append is preceded by a check of the term's local validity: the time of the last
//     successful renewal plus the lease's TTL minus a margin, on this process's monotonic
//     clock. Postgres counts the TTL from a later instant, so a relay that was paused (GC,
//     SIGSTOP, a frozen VM) past its lease finds its term expired when it wakes and appends
//     nothing;
//   - every cursor save carries the token and is refused (ErrFenced) once a standby took the
//     lease over, which also ends the term.
// An append already handed to Kafka when the pause began can still land after a takeover; it
// holds facts the new owner appends too (from the last saved cursor), and every fact carries
// its feed sequence, by which the projections drop the copy.

// ErrFenced means another relay took the lease over: this one's writes are refused.
var ErrFenced = errors.New("relay: the lease was taken over by another relay (fenced)")

// ErrLeaseExpired means the term outlived its last renewal: the lease may be another
// relay's by now, so this one stops appending.
var ErrLeaseExpired = errors.New("relay: the lease expired before it could be renewed")

// LeaseStore is where the lease lives (PGLease).
type LeaseStore interface {
	Acquire(ctx context.Context, owner string, ttl time.Duration) (token int64, held bool, err error)
	Renew(ctx context.Context, owner string, token int64, ttl time.Duration) (bool, error)
	Release(ctx context.Context, owner string, token int64) error
	Holder(ctx context.Context) (Holder, error)
}

// FencedCursorStore loads cursors and saves them under a fencing token (PGCursors).
type FencedCursorStore interface {
	Load(ctx context.Context, name string) (uint64, error)
	FencedSave(ctx context.Context, lease string, token int64, name string, position uint64) error
}

// LeaseConfig configures RunLeased. A standby takes over at most TTL + Poll after the
// active relay's last renewal (defaults: 6 s after it died).
type LeaseConfig struct {
	// Name is the lease's name (LeaseName); Owner names this relay, unique per process.
	Name, Owner string
	// TTL is how long a renewal holds the lease (default 5s).
	TTL time.Duration
	// RenewEvery is how often the active relay renews (default 1s).
	RenewEvery time.Duration
	// Poll is how often a standby tries to take the lease (default 1s).
	Poll time.Duration
	// Margin: the term ends this long before the lease could expire on Postgres' clock
	// (default 1s), for clock-rate drift and an append's time in flight.
	Margin time.Duration
	// OnState, when set, hears of every change of state and failure (readiness, metrics).
	OnState func(LeaseState)
	// Logger logs terms taken and lost (default: discard).
	Logger *slog.Logger
}

func (c *LeaseConfig) defaults() error {
	if c.Name == "" || c.Owner == "" {
		return errors.New("relay: the lease needs a name and an owner")
	}
	c.TTL = check.PositiveOr(c.TTL, 5*time.Second)
	c.RenewEvery = check.PositiveOr(c.RenewEvery, time.Second)
	c.Poll = check.PositiveOr(c.Poll, time.Second)
	c.Margin = check.PositiveOr(c.Margin, time.Second)
	if c.TTL-c.Margin <= c.RenewEvery {
		return fmt.Errorf("relay: lease TTL %s minus margin %s must exceed the renewal interval %s", c.TTL, c.Margin, c.RenewEvery)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// LeaseState is what a relay reports about its lease.
type LeaseState struct {
	// Active is true during a term (this relay relays); Token is the term's fencing token.
	Active bool
	Token  int64
	// Since is when the relay became active or standby.
	Since time.Time
	// Holder is, for a standby, who held the lease at its last attempt.
	Holder Holder
	// Err is the last failure to reach the lease (nil once it was reached again).
	Err error
}

// RunLeased runs run, one term at a time, only while this relay holds the lease; between
// terms it stands by. It returns when ctx ends (releasing a lease it holds, so a standby
// takes over at once) or when run fails on its own during a term.
func RunLeased(ctx context.Context, cfg LeaseConfig, store LeaseStore, run func(ctx context.Context, term *Term) error) error {
	if err := cfg.defaults(); err != nil {
		return err
	}
	if store == nil || run == nil {
		return errors.New("relay: RunLeased needs a lease store and a relay")
	}
	l := &leased{cfg: cfg, store: store}
	for {
		token, start, ok := l.standBy(ctx)
		if !ok {
			return nil
		}
		if err := l.serve(ctx, token, start, run); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

type leased struct {
	cfg   LeaseConfig
	store LeaseStore
}

func (l *leased) report(s LeaseState) {
	if l.cfg.OnState != nil {
		l.cfg.OnState(s)
	}
}

// standBy tries to take the lease every Poll until it does (its token and the instant the
// winning attempt started) or ctx ends.
func (l *leased) standBy(ctx context.Context) (int64, time.Time, bool) {
	since := time.Now()
	state := LeaseState{Since: since}
	for {
		start := time.Now()
		actx, cancel := context.WithTimeout(ctx, l.cfg.Poll)
		token, held, err := l.store.Acquire(actx, l.cfg.Owner, l.cfg.TTL)
		if held && err == nil {
			cancel()
			return token, start, true
		}
		if err == nil {
			state.Holder, err = l.store.Holder(actx)
		}
		cancel()
		if ctx.Err() != nil {
			return 0, time.Time{}, false
		}
		state.Err = err
		l.report(state)
		if wait.For(ctx, l.cfg.Poll-time.Since(start)) != nil {
			return 0, time.Time{}, false
		}
	}
}

// serve is one term: run under a context that ends with the term, renewals every
// RenewEvery. It returns run's error when run failed on its own; nil when the term was lost
// or ctx ended.
func (l *leased) serve(ctx context.Context, token int64, start time.Time, run func(context.Context, *Term) error) error {
	termCtx, end := context.WithCancelCause(ctx)
	defer end(nil)
	term := &Term{lease: l.cfg.Name, token: token, end: end}
	term.extend(start.Add(l.cfg.TTL - l.cfg.Margin))
	active := LeaseState{Active: true, Token: token, Since: time.Now()}
	l.report(active)
	l.cfg.Logger.Info("relay lease taken: relaying", "owner", l.cfg.Owner, "token", token)
	done := make(chan error, 1)
	go func() { done <- run(termCtx, term) }()
	tick := time.NewTicker(l.cfg.RenewEvery)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			cause := context.Cause(termCtx)
			switch {
			case ctx.Err() != nil:
				l.release(ctx, token)
				return nil
			case cause != nil:
				l.cfg.Logger.Warn("relay lease lost: standing by", "owner", l.cfg.Owner, "token", token, "cause", cause)
				return nil
			case err == nil:
				err = errors.New("stopped on its own")
			}
			l.release(ctx, token)
			return fmt.Errorf("relay (lease token %d): %w", token, err)
		case <-tick.C:
			l.renew(termCtx, term, &active)
		}
	}
}

// renew extends the term when Postgres confirms the token, ends it when the token is gone
// or the term's validity passed without a renewal.
func (l *leased) renew(ctx context.Context, term *Term, active *LeaseState) {
	if ctx.Err() != nil {
		return
	}
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, l.cfg.RenewEvery)
	ok, err := l.store.Renew(rctx, l.cfg.Owner, term.token, l.cfg.TTL)
	cancel()
	switch {
	case err == nil && ok:
		term.extend(start.Add(l.cfg.TTL - l.cfg.Margin))
	case err == nil:
		term.lose(ErrFenced)
	case term.Check() != nil:
		// Check ended the term: Postgres could not confirm the lease in time.
	}
	if (err != nil) != (active.Err != nil) {
		active.Err = err
		l.report(*active)
	}
}

// release gives the lease up when this relay stops, so a standby need not wait the expiry.
func (l *leased) release(ctx context.Context, token int64) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := l.store.Release(rctx, l.cfg.Owner, token); err != nil {
		l.cfg.Logger.Warn("relay lease not released: a standby takes over once it expires", "err", err)
	}
}

// Term is one tenure as the active relay. The relay writes through Appender and Cursors,
// which refuse once the term is over.
type Term struct {
	lease string
	token int64
	end   context.CancelCauseFunc

	mu         sync.Mutex
	validUntil time.Time // monotonic: time.Now() plus a duration
	lost       error
}

// Token is the term's fencing token.
func (t *Term) Token() int64 { return t.token }

func (t *Term) extend(until time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lost == nil && until.After(t.validUntil) {
		t.validUntil = until
	}
}

// lose ends the term with cause (the first cause wins).
func (t *Term) lose(cause error) {
	t.mu.Lock()
	if t.lost == nil {
		t.lost = cause
	}
	cause = t.lost
	t.mu.Unlock()
	t.end(cause)
}

// Check returns nil while the term is valid; once its validity passed it ends the term
// and returns ErrLeaseExpired (or the cause that ended it earlier).
func (t *Term) Check() error {
	t.mu.Lock()
	lost := t.lost
	expired := lost == nil && !time.Now().Before(t.validUntil)
	t.mu.Unlock()
	if expired {
		t.lose(ErrLeaseExpired)
		return ErrLeaseExpired
	}
	return lost
}

// Appender wraps out so that each append first checks the term.
func (t *Term) Appender(out Appender) Appender { return termAppender{out: out, term: t} }

// Cursors wraps store so that cursors are saved under the term's token.
func (t *Term) Cursors(store FencedCursorStore) CursorStore {
	return termCursors{store: store, term: t}
}

type termAppender struct {
	out  Appender
	term *Term
}

func (a termAppender) Append(ctx context.Context, topic events.Topic, evs ...events.Event) error {
	if err := a.term.Check(); err != nil {
		return err
	}
	return a.out.Append(ctx, topic, evs...)
}

type termCursors struct {
	store FencedCursorStore
	term  *Term
}

func (c termCursors) Load(ctx context.Context, name string) (uint64, error) {
	return c.store.Load(ctx, name)
}

func (c termCursors) Save(ctx context.Context, name string, position uint64) error {
	err := c.store.FencedSave(ctx, c.term.lease, c.term.token, name, position)
	if errors.Is(err, ErrFenced) {
		c.term.lose(ErrFenced)
	}
	return err
}
