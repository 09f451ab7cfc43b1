//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/trading"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/mt5/remote"
)

// settleBound is issue 17's promise: an acknowledged MARKET order is FILLED or REJECTED
// within 60 s of the return of the role (or the end of the trade-server fault) that held it
// up.
const settleBound = 60 * time.Second

// round is one fault of the run: a role killed, or a trade-server fault injected, from at
// until back (the role serving again, the fault cleared).
type round struct {
	what, proc string
	at, back   time.Time
}

// readOrder asks a gateway for the order's status; ok is false when none answered.
func readOrder(clients []*gwclient.Client, o *flowOrder) (orderAnswer, bool) {
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		res, err := c.Signed(ctx, http.MethodGet, "/v1/order", vals("login", strconv.FormatInt(o.login, 10),
			"origClientOrderId", o.id), gwclient.InQuery)
		cancel()
		if err != nil {
			continue
		}
		var a orderAnswer
		_ = json.Unmarshal(res.Body, &a)
		if res.Status == http.StatusOK {
			return a, true
		}
		if a.Code == -2013 {
			return orderAnswer{}, true // not (yet) in the read model
		}
	}
	return orderAnswer{}, false
}

// watch reads every order of f that is not final yet, once a second, until done.
func watch(f *flow, done <-chan struct{}) {
	for {
		watchOnce(f, false)
		select {
		case <-done:
			return
		case <-time.After(time.Second):
		}
	}
}

// watchOnce reads the orders of f not final yet (all: every order) once, noting each status
// seen and when one was first final; it reports how many acknowledged ones are not final.
func watchOnce(f *flow, all bool) (open int) {
	f.mu.Lock()
	var todo []*flowOrder
	for _, o := range f.orders {
		if all || o.final.IsZero() {
			todo = append(todo, o)
		}
	}
	f.mu.Unlock()
	for _, o := range todo {
		a, ok := readOrder(f.clients, o)
		if !ok {
			continue
		}
		f.mu.Lock()
		o.status, o.code = a.Status, a.Code
		switch {
		case a.Code != 0:
			o.saw(fmt.Sprintf("%s %d", a.Status, a.Code))
		case a.Status != "":
			o.saw(a.Status)
		}
		if isFinal(a.Status) && o.final.IsZero() {
			o.final = time.Now()
		}
		if !o.acked.IsZero() && o.final.IsZero() {
			open++
		}
		f.mu.Unlock()
	}
	return open
}

// Every role of the split run is killed with SIGKILL once, and the trade server times out
// and then loses its connection for a few seconds, all in a random order, while clients place
// MARKET orders through both gateways and retry with the same id whatever the answer was lost
// to (flow): nothing acknowledged is lost, nothing executes twice (the positions on the trade
// server, by the tag in their comment), and every acknowledged order is FILLED or REJECTED
// within 60 s of the return of the role, or the end of the fault, that held it up. The orders
// the trade-server faults leave unknown (IN_DOUBT, -5008, -5015) resolve by settling (issue 17
// item 1): the test checks that each fault did leave some. The active relay is the one killed:
// the standby takes over within 10 s.
//
// Checked to fail: with settling never confirming anything (the executor's settle answering
// "not yet"), four orders sent while the trade server was down stayed ACCEPTED and one the
// timeout left IN_DOUBT stayed so, past their bounds. Before the executor kept an unsettled
// outcome's command in cmd.executions (main, cc478d8), two orders sent as the simulator was
// killed stayed ACCEPTED the same way.
// With seed 1795558604032361216 (the executor killed 18 s before the disconnect), the
// gateways kept accepting orders through the disconnect (no -5015) while the dead executor's
// last "linked" heartbeat counted for 30 s; it counts for command.LinkTimeout now.
func TestSplitRolesKilledAtRandomLoseNothingAndExecuteNothingTwice(t *testing.T) {
	run := startSplit(t)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("TRADESVC_SPLIT_SEED"); v != "" { // replays a logged run's order of faults
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("TRADESVC_SPLIT_SEED=%q: %v", v, err)
		}
		seed = n
	}
	t.Logf("seed %d (TRADESVC_SPLIT_SEED replays it)", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	f := startFlow(t, run.clients, []int64{1001, 1002}, "split", 2, 200*time.Millisecond)
	watchDone := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		watch(f, watchDone)
	}()
	t.Cleanup(func() { // also when the test fails midway: nothing outlives it
		select {
		case <-watchDone:
		default:
			close(watchDone)
		}
		<-watching
	})

	faults := []string{"sim", "relay", "executor", "projector", "gateway", "timeout", "disconnect"}
	rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	var rounds []round
	for _, what := range faults {
		time.Sleep(6 * time.Second) // orders flow
		r := run.fault(what, rng, f)
		rounds = append(rounds, r)
		t.Logf("%s (%s) at %s, over after %v", r.what, r.proc, r.at.Format("15:04:05.000"), r.back.Sub(r.at).Round(time.Millisecond))
	}
	lastBack := rounds[len(rounds)-1].back
	time.Sleep(5 * time.Second)
	f.finish(lastBack.Add(settleBound - 15*time.Second)) // retries of ids not yet acknowledged stop well inside the bound
	for time.Now().Before(lastBack.Add(settleBound)) && watchOnce(f, false) > 0 {
		time.Sleep(time.Second)
	}
	close(watchDone)
	<-watching
	watchOnce(f, true) // the newest status of every order (a REJECTED -1000 retried may have FILLED since)

	checkSplit(t, f, run, rounds)
}

// fault kills a role (sim, relay: the active one, executor, projector, gateway: one of the
// two) and starts it again a moment later, or injects a trade-server fault (timeout,
// disconnect) for a few seconds while a worker of its own adds new orders to f; it returns
// once the role serves again or the fault is cleared.
func (s *splitRun) fault(what string, rng *rand.Rand, f *flow) round {
	s.t.Helper()
	r := round{what: what, proc: what, at: time.Now()}
	switch what {
	case "timeout", "disconnect":
		r.proc = "trade server"
		s.setFault(what)
		lasts := 3*time.Second + time.Duration(rng.IntN(2000))*time.Millisecond
		// The flow's own workers may all be retrying orders an earlier fault left unknown
		// (a simulator killed just before: they wait for settling), and place nothing new
		// while this fault lasts. A worker of its own places new orders meanwhile, so the
		// fault always meets some (seen in CI: a disconnect 6 s after the simulator's
		// restart met no new order and tested nothing).
		f.add(time.Now().Add(lasts))
		time.Sleep(lasts)
		s.setFault("none")
		r.back = time.Now()
		return r
	case "relay":
		r.proc = s.activeRelay()
	case "gateway":
		r.proc = []string{"gateway-1", "gateway-2"}[rng.IntN(2)]
	}
	r.at = time.Now()
	s.kill9(r.proc)
	if what == "relay" {
		s.waitTakeover(r.proc, r.at)
	}
	time.Sleep(time.Second + time.Duration(rng.IntN(2000))*time.Millisecond)
	s.start(r.proc)
	switch what {
	case "gateway":
		apptest.Eventually(s.t, 60*time.Second, r.proc+" serving again", func() bool { return s.pingTLS(r.proc) })
	case "sim":
		apptest.Eventually(s.t, 30*time.Second, "the simulator's port again", func() bool { return dialable(s.simAdr) })
	}
	r.back = time.Now()
	return r
}

// setFault sets the trade server's injected fault (tradesvc sim fault --mode mode).
func (s *splitRun) setFault(mode string) {
	s.t.Helper()
	var err error
	apptest.Eventually(s.t, 30*time.Second, "the simulator taking fault "+mode, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = s.port.Admin().SetFault(ctx, remote.FaultState{Mode: mode})
		return err == nil
	})
}

// waitTakeover waits until a relay other than dead holds a live lease, and checks it took
// no more than 10 s from the death.
func (s *splitRun) waitTakeover(dead string, at time.Time) {
	s.t.Helper()
	var owner string
	var live bool
	apptest.Eventually(s.t, 15*time.Second, "a standby relay holding the lease", func() bool {
		err := s.pg.QueryRow(context.Background(),
			`SELECT owner, expires_at > now() FROM cmd.relay_leases WHERE name = 'mt5'`).Scan(&owner, &live)
		return err == nil && live && s.relayOwnedBy(owner) != "" // the dead relay's pid is no longer listed
	})
	took := time.Since(at)
	s.t.Logf("relay lease taken over by %s %v after %s was killed", s.relayOwnedBy(owner), took.Round(time.Millisecond), dead)
	if took > 10*time.Second {
		s.t.Errorf("the standby relay took over %v after the active one died, want within 10 s", took)
	}
}

func (s *splitRun) relayOwnedBy(owner string) string {
	for _, name := range []string{"relay-1", "relay-2"} {
		if p := s.pid(name); p != 0 && strings.Contains(owner, fmt.Sprintf("-%d-", p)) {
			return name
		}
	}
	return ""
}

// checkSplit holds the split run to its promises: no unexpected answer; every acknowledged
// order found, and FILLED or REJECTED by its bound; each trade-server fault left orders
// unknown for a while (so settling had something to do); every position on the trade
// server belongs to one order of the run, none to two, a FILLED order has exactly one and a
// REJECTED one none.
func checkSplit(t *testing.T, f *flow, run *splitRun, rounds []round) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	deadline := func(o *flowOrder) time.Time {
		d := o.acked.Add(settleBound)
		for _, r := range rounds {
			if o.final.IsZero() || r.at.Before(o.final) {
				if b := r.back.Add(settleBound); b.After(d) {
					d = b
				}
			}
		}
		return d
	}
	byStatus := map[string]int{}
	codes := map[int]int{}
	acked := 0
	for _, o := range f.orders {
		if o.acked.IsZero() {
			continue
		}
		acked++
		byStatus[o.status]++
		if o.status == string(trading.StatusRejected) {
			codes[o.code]++
		}
		switch {
		case o.status == "":
			t.Errorf("acknowledged order %s (%s at %s) is lost: GET /v1/order does not find it", o.id, o.answer,
				o.acked.Format("15:04:05.000"))
		case o.final.IsZero():
			t.Errorf("acknowledged order %s (%s at %s) is %s (code %d), not FILLED or REJECTED by %s", o.id, o.answer,
				o.acked.Format("15:04:05.000"), o.status, o.code, deadline(o).Format("15:04:05.000"))
		case o.final.After(deadline(o)):
			t.Errorf("order %s became %s at %s, after its bound %s", o.id, o.status, o.final.Format("15:04:05.000"),
				deadline(o).Format("15:04:05.000"))
		}
	}
	if acked < 50 {
		t.Errorf("only %d orders acknowledged: the flow did not run", acked)
	}
	// Each trade-server fault left orders unknown for a while, so that settling had something
	// to do: IN_DOUBT or -5008 (timed out) for the timeout, -5015 (no connection; answered, or
	// the status's code) for the disconnect, first seen while it lasted or within 5 s after.
	// An unknown attempt that was settled "did not execute" (REJECTED -1000) before any answer
	// or read showed it IN_DOUBT counts for the timeout too: ACK orders never see IN_DOUBT in
	// their answer, and the reads poll once a second (seen in a make test run: the timeout's orders showed
	// only FILLED and REJECTED -1000).
	signs := map[string][]string{
		"timeout": {string(trading.StatusInDoubt), string(trading.StatusInDoubt) + " -5008",
			string(trading.StatusInDoubt) + " -5009", "code -5008",
			string(trading.StatusRejected) + " -1000", "code -1000"},
		"disconnect": {"code -5015", string(trading.StatusRejected) + " -5015"},
	}
	for _, r := range rounds {
		want, ok := signs[r.what]
		if !ok {
			continue
		}
		meanwhile := map[string]int{} // every answer first seen in the window, for the log
		hits := 0
		for _, o := range f.orders {
			for sign, at := range o.seen {
				if !at.Before(r.at) && at.Before(r.back.Add(5*time.Second)) {
					meanwhile[sign]++
					if slices.Contains(want, sign) {
						hits++
					}
				}
			}
		}
		t.Logf("the trade server's %s from %s: answers first seen meanwhile (or within 5 s after) %v", r.what,
			r.at.Format("15:04:05.000"), meanwhile)
		if hits == 0 {
			t.Errorf("the trade server's %s left no order unknown (none saw %s): it tested nothing", r.what,
				strings.Join(want, ", "))
		}
	}

	// The trade server's positions, by the tag each operation's send carries in its comment.
	ctx := context.Background()
	tags := map[string]*flowOrder{} // (login, tag) → order
	byID := map[string]*flowOrder{}
	for _, o := range f.orders {
		byID[fmt.Sprint(o.login, "/", o.id)] = o
	}
	rows, err := run.pg.Query(ctx, `SELECT login, tag, client_order_id FROM rm.operations WHERE login IN (1001, 1002)`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var login int64
		var tag, coid string
		if err := rows.Scan(&login, &tag, &coid); err != nil {
			t.Fatal(err)
		}
		if o := byID[fmt.Sprint(login, "/", coid)]; o != nil {
			tags[fmt.Sprint(login, "/", tag)] = o
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	executed := map[*flowOrder]int{}
	positions := 0
	for _, login := range []int64{1001, 1002} {
		ps, err := run.port.Positions(ctx, login)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			positions++
			o := tags[fmt.Sprint(login, "/", trading.TagOf(p.Comment))]
			if o == nil {
				t.Errorf("position %d of %d (comment %q) belongs to no order of the run", p.Ticket, login, p.Comment)
				continue
			}
			executed[o]++
		}
	}
	for _, o := range f.orders {
		n := executed[o]
		switch {
		case n > 1:
			t.Errorf("order %s executed %d times on the trade server", o.id, n)
		case o.status == string(trading.StatusFilled) && n != 1:
			t.Errorf("order %s is FILLED but the trade server holds %d positions of it", o.id, n)
		case o.status == string(trading.StatusRejected) && n != 0:
			t.Errorf("order %s is REJECTED (code %d) but the trade server executed it", o.id, o.code)
		}
	}
	var cs []string
	for c, n := range codes {
		cs = append(cs, fmt.Sprintf("%d×%d", c, n))
	}
	sort.Strings(cs)
	t.Logf("%d acknowledged orders: %v; REJECTED codes %s; %d positions on the trade server", acked, byStatus,
		strings.Join(cs, " "), positions)
}
