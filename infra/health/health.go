// Package health tells operators and orchestrators whether a process can serve: GET /livez
// (the process makes progress) and GET /readyz (a JSON report per role and per dependency,
// 503 when not ready), from probes run on an interval rather than on every request. It
// logs every change of readiness, so that operators learn of a failure from the service.
package health

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"tradesvc/infra/check"
)

// Probe checks one dependency: nil when it answers. It must return within its context.
type Probe func(ctx context.Context) error

// RoleReport is one role's part of the readiness report.
type RoleReport struct {
	// Ready is false when the role cannot serve; Reasons say why.
	Ready   bool     `json:"ready"`
	Reasons []string `json:"reasons,omitempty"`
	// Details are the facts behind the verdict (projection lags, quote ages, ...).
	Details any `json:"details,omitempty"`
}

// Dependency is the last probe of one dependency.
type Dependency struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Since is when it entered its current state (up or down).
	Since     time.Time `json:"since"`
	LatencyMs int64     `json:"latencyMs"`
}

// Report is the body of GET /readyz.
type Report struct {
	Ready        bool                  `json:"ready"`
	CheckedAt    time.Time             `json:"checkedAt"`
	Reasons      []string              `json:"reasons,omitempty"`
	Roles        map[string]RoleReport `json:"roles"`
	Dependencies map[string]Dependency `json:"dependencies"`
}

// Sink receives the same facts as Prometheus gauges (infra/metrics implements it).
type Sink interface {
	SetReady(role string, ready bool)
	SetDependencyUp(name string, up bool)
}

// Config configures a Monitor.
type Config struct {
	// Interval between two rounds of probes and reports (default 2s).
	Interval time.Duration
	// Now is the clock of the report.
	Now func() time.Time
	// Logger receives every change of readiness (default slog.Default()).
	Logger *slog.Logger
	// Sink, when set, mirrors readiness and dependency state as metrics.
	Sink Sink
	// ProbeTimeout bounds one probe (default 3s).
	ProbeTimeout time.Duration
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs check.Problems
	errs.If(c.Now == nil, "health: no clock")
	errs.If(c.Interval < 0 || c.ProbeTimeout < 0, "health: negative interval or probe timeout")
	return errs.Err()
}

// Monitor probes the dependencies and asks the roles for their reports every Interval, and
// serves the latest result.
type Monitor struct {
	cfg Config

	deps  []named[Probe]
	roles []named[func(now time.Time) RoleReport]

	mu       sync.Mutex
	report   Report
	lastTick time.Time
	ran      bool
}

type named[T any] struct {
	name string
	fn   T
}

// New builds a monitor; register probes and roles before Run.
func New(cfg Config) (*Monitor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Interval = cmp.Or(cfg.Interval, 2*time.Second)
	cfg.ProbeTimeout = cmp.Or(cfg.ProbeTimeout, 3*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Monitor{cfg: cfg, report: Report{Reasons: []string{"starting: not probed yet"},
		Roles: map[string]RoleReport{}, Dependencies: map[string]Dependency{}}}, nil
}

// AddDependency registers a dependency probed every round; a failing one makes the process
// not ready.
func (m *Monitor) AddDependency(name string, p Probe) { m.deps = append(m.deps, named[Probe]{name, p}) }

// AddRole registers a role's report, asked every round after the probes.
func (m *Monitor) AddRole(name string, report func(now time.Time) RoleReport) {
	m.roles = append(m.roles, named[func(time.Time) RoleReport]{name, report})
}

// Run probes and reports until ctx ends; it returns nil then.
func (m *Monitor) Run(ctx context.Context) error {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		m.round(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// round runs every probe at once, waits for all of them, then builds the report.
func (m *Monitor) round(ctx context.Context) {
	type result struct {
		err  error
		took time.Duration
	}
	results := make([]result, len(m.deps))
	var wg sync.WaitGroup
	for i, d := range m.deps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, m.cfg.ProbeTimeout)
			defer cancel()
			start := time.Now()
			err := d.fn(pctx)
			results[i] = result{err: err, took: time.Since(start)}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return // shutting down: a probe cut short says nothing about the dependency
	}
	now := m.cfg.Now()
	m.mu.Lock()
	prev := m.report
	m.mu.Unlock()
	r := Report{Ready: true, CheckedAt: now, Roles: map[string]RoleReport{}, Dependencies: map[string]Dependency{}}
	for i, d := range m.deps {
		dep := Dependency{OK: results[i].err == nil, LatencyMs: results[i].took.Milliseconds(), Since: now}
		if !dep.OK {
			dep.Error = results[i].err.Error()
			r.Ready = false
			r.Reasons = append(r.Reasons, d.name+" unreachable: "+dep.Error)
		}
		if old, ok := prev.Dependencies[d.name]; ok && old.OK == dep.OK {
			dep.Since = old.Since
		}
		r.Dependencies[d.name] = dep
		if m.cfg.Sink != nil {
			m.cfg.Sink.SetDependencyUp(d.name, dep.OK)
		}
	}
	for _, role := range m.roles {
		rr := role.fn(now)
		r.Roles[role.name] = rr
		if !rr.Ready {
			r.Ready = false
			for _, why := range rr.Reasons {
				r.Reasons = append(r.Reasons, role.name+": "+why)
			}
		}
		if m.cfg.Sink != nil {
			m.cfg.Sink.SetReady(role.name, rr.Ready)
		}
	}
	m.mu.Lock()
	first := !m.ran
	m.report, m.lastTick, m.ran = r, now, true
	m.mu.Unlock()
	m.logChange(first, prev, r)
}

// logChange logs readiness when it changes (and the reasons when they change while not
// ready): an operator's log shows when and why the process stopped being ready.
func (m *Monitor) logChange(first bool, prev, r Report) {
	switch {
	case !r.Ready && (first || prev.Ready || !slices.Equal(reasonKinds(prev.Reasons), reasonKinds(r.Reasons))):
		m.cfg.Logger.Error("not ready", "reasons", strings.Join(r.Reasons, "; "))
	case r.Ready && (first || !prev.Ready):
		m.cfg.Logger.Info("ready")
	}
}

// reasonKinds drops the numbers from reasons, so that a growing lag or age is not logged as
// a new reason every round.
func reasonKinds(reasons []string) []string {
	out := make([]string, len(reasons))
	for i, r := range reasons {
		out[i] = strings.Map(func(c rune) rune {
			if c >= '0' && c <= '9' || c == '.' {
				return -1
			}
			return c
		}, r)
	}
	sort.Strings(out)
	return out
}

// Report returns the latest report, a copy the caller may change.
func (m *Monitor) Report() Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.report
	r.Reasons = slices.Clone(r.Reasons)
	r.Dependencies = maps.Clone(r.Dependencies)
	r.Roles = maps.Clone(r.Roles)
	for name, rr := range r.Roles {
		rr.Reasons = slices.Clone(rr.Reasons)
		r.Roles[name] = rr
	}
	return r
}

// Live reports whether the monitor's loop ran recently: the process makes progress.
func (m *Monitor) Live(now time.Time) (bool, time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.ran {
		return true, time.Time{} // starting: the first round is under way
	}
	return now.Sub(m.lastTick) <= 3*m.cfg.Interval+m.cfg.ProbeTimeout, m.lastTick
}

// Handler serves GET /livez and GET /readyz.
func (m *Monitor) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(w http.ResponseWriter, _ *http.Request) {
		live, last := m.Live(m.cfg.Now())
		status := http.StatusOK
		if !live {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, map[string]any{"live": live, "lastRound": last})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		r := m.Report()
		status := http.StatusOK
		if !r.Ready {
			status = http.StatusServiceUnavailable
		}
		writeJSON(w, status, r)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v) // the client went away: nothing to tell it
}
