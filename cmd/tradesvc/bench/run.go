package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/kafka"
)

// Env is what a run needs from outside: where the service is, the stores of its floor (the
// service's own configuration), and the admin paths that issue keys and fund logins.
type Env struct {
	// BaseURL is like https://127.0.0.1:8443; CAPEM the CA that signed its certificate (nil:
	// the system's roots).
	BaseURL string
	CAPEM   []byte
	// Kafka and PGURL are the service's Kafka and Postgres (for the floor).
	Kafka kafka.Config
	PGURL string
	// CreateKey issues a trading key scoped to logins (`tradesvc keys create`); nil when keys
	// cannot be created here.
	CreateKey func(ctx context.Context, logins []int64) (Key, error)
	// Deposit credits amount to login on the trade server (`tradesvc sim deposit`); nil when
	// logins cannot be funded here.
	Deposit func(ctx context.Context, login int64, amount apd.Decimal) error
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// runner holds one run's shared state.
type runner struct {
	env  Env
	o    Options
	hc   *http.Client
	tls  *tls.Config
	now  func() time.Time // the server's clock
	id   string
	logw io.Writer
	logm sync.Mutex

	agents     []*agent
	createAuto bool
	created    int
	ready      map[int64]bool // logins whose account answered
	deals      *dealBook
	streams    *streamGroup

	seqMu sync.Mutex
	seq   int
}

// Run runs one scenario and returns its report. The error is for a run that could not be
// done; a run that lost orders returns its report with OK false.
func Run(ctx context.Context, env Env, o Options) (*Report, error) {
	if err := o.Normalize(); err != nil {
		return nil, err
	}
	r, err := newRunner(env, o)
	if err != nil {
		return nil, err
	}
	defer r.close()
	rep := &Report{Tool: "tradesvc bench", Scenario: o.Scenario, RunID: r.id, StartedAt: time.Now().UnixMilli(),
		BaseURL: env.BaseURL, Settings: Settings{Symbol: o.Symbol, Side: o.Side, Volume: o.Volume, Conns: o.Conns,
			KeyUsage: o.KeyUsage, RecvWindow: o.RecvWindow, Streams: o.Streams && o.Scenario != ScenarioResult}}
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	if o.Floor {
		r.logf("measuring the floor (%d samples of each part)", o.FloorSamples)
		f, err := r.floor(ctx)
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		rep.Floor = f
	}
	var acked, inDoubt []*orderRec
	switch o.Scenario {
	case ScenarioResult, ScenarioAck:
		acked, inDoubt, err = r.fixedRate(ctx, rep)
	case ScenarioSustain:
		acked, inDoubt, err = r.sustainOnly(ctx, rep)
	case ScenarioOverload:
		acked, inDoubt, err = r.overload(ctx, rep)
	}
	if err != nil {
		return nil, err
	}
	if o.Verify {
		r.logf("verifying %d acknowledged orders through GET /v1/order", len(acked))
		v := r.verify(ctx, acked, inDoubt)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.Verify = &v
	}
	rep.Keys = r.keysUsed()
	if o.KeysOut != "" {
		if err := WriteKeysFile(o.KeysOut, r.keys()); err != nil {
			return nil, fmt.Errorf("--keys-out: %w", err)
		}
	}
	rep.FinishedAt = time.Now().UnixMilli()
	rep.settle()
	return rep, nil
}

func newRunner(env Env, o Options) (*runner, error) {
	if env.BaseURL == "" {
		return nil, errors.New("no base URL")
	}
	hc, err := gwclient.NewHTTPClient(env.CAPEM, o.Conns)
	if err != nil {
		return nil, err
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if env.CAPEM != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(env.CAPEM)
		tlsCfg.RootCAs = pool
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	logw := env.Log
	if logw == nil {
		logw = io.Discard
	}
	r := &runner{env: env, o: o, hc: hc, tls: tlsCfg, now: time.Now, id: hex.EncodeToString(b[:]), logw: logw,
		deals: newDealBook(), ready: map[int64]bool{}}
	r.streams = newStreamGroup(r)
	return r, nil
}

func (r *runner) close() {
	r.streams.close()
	r.hc.CloseIdleConnections()
}

func (r *runner) logf(format string, args ...any) {
	r.logm.Lock()
	defer r.logm.Unlock()
	fmt.Fprintf(r.logw, "[bench %s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// setUp reads the server's clock, loads and creates keys, and funds the logins.
func (r *runner) setUp(ctx context.Context) error {
	probe := &gwclient.Client{BaseURL: r.env.BaseURL, HTTP: r.hc}
	offset, err := gwclient.ClockOffset(ctx, probe, time.Now)
	if err != nil {
		return fmt.Errorf("the service does not answer: %w", err)
	}
	r.now = func() time.Time { return time.Now().Add(offset) }
	var keys []Key
	if r.o.KeysFile != "" {
		if keys, err = ReadKeysFile(r.o.KeysFile); err != nil {
			return err
		}
	}
	n, auto, _ := r.o.CreateCount()
	r.createAuto = auto
	if (n > 0 || auto) && r.env.CreateKey == nil {
		return errors.New("--create-keys: keys cannot be created from here")
	}
	for _, k := range keys {
		r.addAgent(k)
	}
	for range n {
		if _, err := r.createAgent(ctx); err != nil {
			return err
		}
	}
	if len(r.agents) == 0 && !auto {
		return errors.New("no API keys: pass --keys FILE and/or --create-keys N|auto")
	}
	if r.o.Fund != "" {
		if err := r.fund(ctx); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) addAgent(k Key) *agent {
	a := &agent{Key: k, idx: len(r.agents), c: &gwclient.Client{BaseURL: r.env.BaseURL, APIKey: k.APIKey,
		Secret: []byte(k.APISecret), HTTP: r.hc, Now: r.now, RecvWindow: r.o.RecvWindow}}
	r.agents = append(r.agents, a)
	return a
}

// createAgent issues one more key, scoped to the next logins in turn.
func (r *runner) createAgent(ctx context.Context) (*agent, error) {
	k, err := r.env.CreateKey(ctx, CreatedLogins(r.created, r.o.LoginsPerKey, r.o.Logins))
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	r.created++
	return r.addAgent(k), nil
}

// fund deposits --fund on every login the keys (and the keys still to create) trade.
func (r *runner) fund(ctx context.Context) error {
	if r.env.Deposit == nil {
		return errors.New("--fund: logins cannot be funded from here")
	}
	amount, err := dec.Parse(r.o.Fund)
	if err != nil {
		return fmt.Errorf("--fund: %w", err)
	}
	seen := map[int64]bool{}
	var logins []int64
	add := func(ls []int64) {
		for _, l := range ls {
			if !seen[l] {
				seen[l] = true
				logins = append(logins, l)
			}
		}
	}
	for _, a := range r.agents {
		add(a.Logins)
	}
	if r.createAuto {
		add(r.o.Logins)
	}
	for _, l := range logins {
		if err := r.env.Deposit(ctx, l, amount); err != nil {
			return fmt.Errorf("fund login %d: %w", l, err)
		}
	}
	r.logf("funded logins %s with %s each", joinLogins(logins), r.o.Fund)
	return nil
}

// keysFor returns the first keys that carry rate orders per second, preparing them (limits,
// user stream) and creating more when --create-keys auto allows.
func (r *runner) keysFor(ctx context.Context, rate float64) ([]*agent, error) {
	for n := 1; ; n++ {
		if n > len(r.agents) {
			if !r.createAuto {
				need := KeysFor(rate, r.agents[0].limits.OrderRate(r.o.KeyUsage))
				return nil, fmt.Errorf("%.0f orders/s needs %d keys at %.1f orders/s each (--key-usage %.2f of their limits); "+
					"there are %d: pass more with --keys or --create-keys auto", rate, need,
					r.agents[0].limits.OrderRate(r.o.KeyUsage), r.o.KeyUsage, len(r.agents))
			}
			if _, err := r.createAgent(ctx); err != nil {
				return nil, err
			}
		}
		a := r.agents[n-1]
		if a.budget == nil {
			if err := r.prepare(ctx, a); err != nil {
				return nil, err
			}
		}
		perKey := a.limits.OrderRate(r.o.KeyUsage)
		for _, b := range r.agents[:n] {
			perKey = min(perKey, b.limits.OrderRate(r.o.KeyUsage))
		}
		if float64(n)*perKey >= rate-1e-9 {
			return r.agents[:n], nil
		}
	}
}

// prepare reads a key's limits, waits for its logins' accounts, and opens its user data
// stream.
func (r *runner) prepare(ctx context.Context, a *agent) error {
	if _, err := a.prepare(ctx, r.o.Symbol, r.now); err != nil {
		return err
	}
	for _, l := range a.Logins {
		if r.ready[l] {
			continue
		}
		if err := a.awaitAccount(ctx, l, time.Minute); err != nil {
			return err
		}
		r.ready[l] = true
	}
	if r.o.Streams && r.o.Scenario != ScenarioResult {
		s, err := r.streams.open(ctx, a)
		if err != nil {
			return err
		}
		a.stream = s
	}
	return nil
}

// waitForFreshWindows waits, when a key has already spent part of its budgets in the
// current windows (an earlier step, another run, the verification of the previous scenario),
// until windows open where the load fits, so that it never meets a 429: the next 10 s window
// when only ORDERS per 10 s is short, else the next minute (every window opens then).
func (r *runner) waitForFreshWindows(ctx context.Context, agents []*agent, rate float64) error {
	perKey := rate / float64(len(agents))
	for _, a := range agents {
		u, err := a.usageNow(ctx, r.o.Symbol)
		if err != nil {
			return err
		}
		if u.fresh(a.limits, perKey) {
			continue
		}
		now := r.now()
		next := time.UnixMilli((minuteOf(now) + 1) * 60000)
		if (usage{weight: u.weight, orders1m: u.orders1m}).fresh(a.limits, perKey) {
			next = time.UnixMilli((now.UnixMilli()/10000 + 1) * 10000)
		}
		wait := next.Add(windowGuard).Sub(now)
		r.logf("key %s has used weight %d, orders %d (10 s) / %d (1 m) in the current windows: waiting %.1f s for fresh ones",
			short(a.APIKey), u.weight, u.orders10s, u.orders1m, wait.Seconds())
		if err := sleep(ctx, wait); err != nil {
			return err
		}
		return r.waitForFreshWindows(ctx, agents, rate)
	}
	return nil
}

// nextIDs reserves n client order ids, unique to this run.
func (r *runner) nextIDs(n int) int {
	r.seqMu.Lock()
	defer r.seqMu.Unlock()
	first := r.seq
	r.seq += n
	return first
}

// clientOrderID names order seq of this run: at most 36 characters of the allowed set.
func clientOrderID(runID string, seq int) string { return fmt.Sprintf("bn-%s-%d", runID, seq) }

func (r *runner) keys() []Key {
	out := make([]Key, 0, len(r.agents))
	for _, a := range r.agents {
		out = append(out, a.Key)
	}
	return out
}

func (r *runner) keysUsed() KeysReport {
	logins := map[int64]bool{}
	var list []int64
	for _, a := range r.agents {
		for _, l := range a.Logins {
			if !logins[l] {
				logins[l] = true
				list = append(list, l)
			}
		}
	}
	kr := KeysReport{Keys: len(r.agents), Logins: list}
	if len(r.agents) > 0 && r.agents[0].budget != nil {
		kr.Limits = r.agents[0].limits
		kr.OrdersPerSecPerKey = r.agents[0].limits.OrderRate(r.o.KeyUsage)
	}
	return kr
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func joinLogins(ls []int64) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprint(l)
	}
	return strings.Join(parts, ",")
}
