package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"tradesvc/infra/health"
	"tradesvc/infra/kafka"
	"tradesvc/infra/mt5/relay"
)

// instance names this process in heartbeats and as the producer of what it appends.
func (a *App) instance() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// runRelay copies the trade server's feeds into the log while this process holds the relay
// lease, and stands by while another relay does: any number of relay processes may run,
// exactly one relays (infra/mt5/relay/lease.go).
func (a *App) runRelay(ctx context.Context) error {
	log := a.log.With("role", "relay")
	cursors, err := relay.NewPGCursors(a.pool)
	if err != nil {
		return err
	}
	lease, err := relay.NewPGLease(a.pool, relay.LeaseName)
	if err != nil {
		return err
	}
	// Its own idempotent producer: market data flows all the time and must not queue the
	// executor's outcomes or the gateways' commands (in the all-roles process).
	pub, err := kafka.NewPublisher(a.kcfg, log)
	if err != nil {
		return err
	}
	defer a.closeLogged(log, "relay publisher", pub.Close)
	instance := a.instance()
	appender, err := kafka.NewAppender(pub, "relay/"+instance, a.now)
	if err != nil {
		return err
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	owner := instance + "-" + hex.EncodeToString(suffix) // unique even where hosts and pids repeat (containers)
	a.relay.start(owner)
	cfg := relay.LeaseConfig{Name: relay.LeaseName, Owner: owner, Logger: log,
		OnState: func(s relay.LeaseState) {
			a.relay.leaseState(s)
			a.metrics.RelayActive(s.Active)
		}}
	return relay.RunLeased(ctx, cfg, lease, func(ctx context.Context, term *relay.Term) error {
		rl, err := relay.NewRelay(relay.RelayConfig{OnAppended: a.metrics.RelayAppended,
			OnError: func(loop string, err error) { a.relay.failed(a.now(), loop, err) },
			OnFacts: func(caughtUp bool) { a.relayIntake.set(caughtUp, a.now()) }}, a.port,
			term.Appender(appender), term.Cursors(cursors), log, a.now)
		if err != nil {
			return err
		}
		// Only the lease holder reports the relay's intake (rm.intake): a standby relays nothing.
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return rl.Run(ctx) })
		g.Go(func() error { return a.reportRelayIntake(ctx) })
		return g.Wait()
	})
}

// relayHealth is what readiness reads of a running relay.
type relayHealth struct {
	mu      sync.Mutex
	running bool
	known   bool // the lease was tried at least once
	owner   string
	state   relay.LeaseState
	loop    string
	err     error
	errAt   time.Time
}

func (r *relayHealth) start(owner string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.running, r.owner = true, owner
}

func (r *relayHealth) leaseState(s relay.LeaseState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state, r.known = s, true
}

func (r *relayHealth) failed(now time.Time, loop string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loop, r.err, r.errAt = loop, err, now
}

type relayDetails struct {
	// State is "active" (this process relays, under Token) or "standby" (Holder relays).
	State  string        `json:"state"`
	Owner  string        `json:"owner"`
	Token  int64         `json:"token,omitempty"`
	Since  time.Time     `json:"since,omitzero"`
	Holder *relay.Holder `json:"holder,omitempty"`
	// LeaseError is the last failure to reach the lease (Postgres), while it lasts.
	LeaseError      string    `json:"leaseError,omitempty"`
	LastRelayError  string    `json:"lastRelayError,omitempty"`
	LastRelayFailed time.Time `json:"lastRelayFailure,omitzero"`
}

// relayReport: a standby is as ready as the active relay (standing by is its job); a relay
// that cannot reach its lease is not ready, since it can neither relay nor take over.
func (a *App) relayReport(time.Time) health.RoleReport {
	a.relay.mu.Lock()
	defer a.relay.mu.Unlock()
	if !a.relay.running || !a.relay.known {
		return health.RoleReport{Reasons: []string{"starting"}}
	}
	s := a.relay.state
	d := relayDetails{State: "standby", Owner: a.relay.owner, Since: s.Since, LastRelayFailed: a.relay.errAt}
	if s.Active {
		d.State, d.Token = "active", s.Token
	} else if s.Holder.Owner != "" {
		h := s.Holder
		d.Holder = &h
	}
	if a.relay.err != nil {
		d.LastRelayError = a.relay.loop + ": " + a.relay.err.Error()
	}
	r := health.RoleReport{Ready: true, Details: d}
	if s.Err != nil {
		d.LeaseError = s.Err.Error()
		r.Ready, r.Reasons, r.Details = false, []string{"relay lease unreachable: " + s.Err.Error()}, d
	}
	return r
}
