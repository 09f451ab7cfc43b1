package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tradesvc/events/dec"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/wait"
)

// addAgent puts a key to work: its client signs with the server's clock.
func (r *runner) addAgent(k Key) *agent {
	a := &agent{Key: k, c: &gwclient.Client{BaseURL: r.env.BaseURL, APIKey: k.APIKey,
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
	if r.o.Streams && r.o.Scenario != ScenarioResult && (r.o.StreamKeys == 0 || r.streams.count < r.o.StreamKeys) {
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
		pause := next.Add(windowGuard).Sub(now)
		r.logf("key %s has used weight %d, orders %d (10 s) / %d (1 m) in the current windows: waiting %.1f s for fresh ones",
			short(a.APIKey), u.weight, u.orders10s, u.orders1m, pause.Seconds())
		if err := wait.For(ctx, pause); err != nil {
			return err
		}
		return r.waitForFreshWindows(ctx, agents, rate)
	}
	return nil
}

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
