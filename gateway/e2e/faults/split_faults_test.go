//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/trading"
	"tradesvc/gateway/gwclient"
)

// inDoubtSettles says whether an order the executor could not decide settles by itself.
// Today it does not: an order in flight when the trade server or the executor is killed can
// stay IN_DOUBT (-5008/-5009), or ACCEPTED after a send the trade server never answered,
// until the reconciliation of issue 17 item 1 (built on its own branch) asks the trade server
// by tag. Until then this test tolerates exactly those orders, and only those acknowledged
// around a kill of the simulator or the executor; it still holds them to "never executed
// twice". Set it to true once that reconciliation is merged.
const inDoubtSettles = false

// settleBound is issue 17's promise: an acknowledged MARKET order is FILLED or REJECTED
// within 60 s of the return of the role whose death held it up.
const settleBound = 60 * time.Second

type flowOrder struct {
	id     string
	login  int64
	acked  time.Time // zero: never acknowledged
	answer string    // the status of the acknowledgement
	status string    // the newest status GET /v1/order answered ("": never found)
	code   int
	final  time.Time // when it was first seen FILLED or REJECTED
}

type killRound struct {
	role, proc string
	at, back   time.Time
}

// splitFlow places MARKET orders through both gateways, each retried with its id until the
// service acknowledges it (an answer that carries the order's status), and watches every
// acknowledged order until it is final.
type splitFlow struct {
	t   *testing.T
	run *splitRun

	mu         sync.Mutex
	orders     []*flowOrder
	unexpected []string
	resends    int
	stop       atomic.Bool // no new ids
	giveUp     atomic.Bool // no more retries
}

type orderAnswer struct {
	Status        string `json:"status"`
	Code          int    `json:"code"`
	ClientOrderID string `json:"clientOrderId"`
	Msg           string `json:"msg"`
}

func (f *splitFlow) place(o *flowOrder, gw int) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := f.run.clients[gw%2].Signed(ctx, http.MethodPost, "/v1/order", vals("login", strconv.FormatInt(o.login, 10),
		"symbol", "BTCUSD", "type", "MARKET", "side", "BUY", "volume", "0.01", "newClientOrderId", o.id), gwclient.InBody)
	if err != nil {
		return "", false // the gateway is down or the answer was lost: retry with the same id
	}
	var a orderAnswer
	_ = json.Unmarshal(res.Body, &a)
	if a.Status != "" {
		if a.ClientOrderID != o.id {
			f.note("%s: answered for %q: %s", o.id, a.ClientOrderID, res.Body)
		}
		return a.Status, true
	}
	// Not recorded, or not known to be: -1001, -1008, -5009, -5015 (5xx), or -1021 when a
	// request waited out its recvWindow; each is retried with the same id.
	if res.Status < 500 && a.Code != -1021 {
		f.note("%s: unexpected answer %d %s", o.id, res.Status, res.Body)
	}
	return "", false
}

func (f *splitFlow) note(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unexpected = append(f.unexpected, fmt.Sprintf(format, args...))
}

// work places orders for login until stopped.
func (f *splitFlow) work(login int64, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, uint64(login)))
	for i := 0; !f.stop.Load(); i++ {
		o := &flowOrder{id: fmt.Sprintf("split-%d-%d", login, i), login: login}
		f.mu.Lock()
		f.orders = append(f.orders, o)
		f.mu.Unlock()
		gw := rng.IntN(2)
		for attempt := 0; !f.giveUp.Load(); attempt++ {
			if attempt > 0 {
				f.mu.Lock()
				f.resends++
				f.mu.Unlock()
			}
			if st, ok := f.place(o, gw+attempt); ok {
				f.mu.Lock()
				o.acked, o.answer = time.Now(), st
				f.mu.Unlock()
				break
			}
			time.Sleep(300 * time.Millisecond)
		}
		// A client that lost the answer sends the same order again, to the other gateway: it
		// is answered from the record and never trades again.
		if !o.acked.IsZero() && rng.IntN(3) == 0 {
			f.mu.Lock()
			f.resends++
			f.mu.Unlock()
			f.place(o, gw+1)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// read asks a gateway for the order's status.
func (f *splitFlow) read(o *flowOrder) (orderAnswer, bool) {
	for _, c := range f.run.clients {
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

func isFinal(status string) bool {
	return status == string(trading.StatusFilled) || status == string(trading.StatusRejected)
}

// watch reads every acknowledged order that is not final yet, once a second, until done.
func (f *splitFlow) watch(done <-chan struct{}) {
	for {
		f.sweep()
		select {
		case <-done:
			return
		case <-time.After(time.Second):
		}
	}
}

// sweep reads the orders not yet final once; it reports how many acknowledged ones are not.
func (f *splitFlow) sweep() (open int) {
	f.mu.Lock()
	var todo []*flowOrder
	for _, o := range f.orders {
		if o.final.IsZero() {
			todo = append(todo, o)
		}
	}
	f.mu.Unlock()
	for _, o := range todo {
		a, ok := f.read(o)
		if !ok {
			continue
		}
		f.mu.Lock()
		o.status, o.code = a.Status, a.Code
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

// Every role of the split run is killed with SIGKILL once, in a random order, while two
// clients place MARKET orders through both gateways and retry with the same id whatever the
// answer was lost to: nothing acknowledged is lost, nothing executes twice (the positions on
// the trade server, by the tag in their comment), and every acknowledged order is FILLED or
// REJECTED within 60 s of the return of the role that held it up. The active relay is the
// one killed: the standby takes over within 10 s.
func TestSplitRolesKilledAtRandomLoseNothingAndExecuteNothingTwice(t *testing.T) {
	run := startSplit(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	f := &splitFlow{t: t, run: run}
	var workers sync.WaitGroup
	for _, login := range []int64{1001, 1002} {
		workers.Add(1)
		go func() {
			defer workers.Done()
			f.work(login, seed)
		}()
	}
	watchDone := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		f.watch(watchDone)
	}()
	defer func() { // also when the test fails midway: nothing outlives it
		f.stop.Store(true)
		f.giveUp.Store(true)
		workers.Wait()
		select {
		case <-watchDone:
		default:
			close(watchDone)
		}
		<-watching
	}()

	roles := []string{"sim", "relay", "executor", "projector", "gateway"}
	rng.Shuffle(len(roles), func(i, j int) { roles[i], roles[j] = roles[j], roles[i] })
	var kills []killRound
	for _, role := range roles {
		time.Sleep(6 * time.Second) // orders flow
		proc := role
		switch role {
		case "relay":
			proc = run.activeRelay()
		case "gateway":
			proc = []string{"gateway-1", "gateway-2"}[rng.IntN(2)]
		}
		k := killRound{role: role, proc: proc, at: time.Now()}
		run.kill9(proc)
		if role == "relay" {
			run.waitTakeover(proc, k.at)
		}
		time.Sleep(time.Second + time.Duration(rng.IntN(2000))*time.Millisecond)
		run.start(proc)
		switch role {
		case "gateway":
			apptest.Eventually(t, 60*time.Second, proc+" serving again", func() bool { return run.pingTLS(proc) })
		case "sim":
			apptest.Eventually(t, 30*time.Second, "the simulator's port again", func() bool { return dialable(run.simAdr) })
		}
		k.back = time.Now()
		kills = append(kills, k)
		t.Logf("killed %s (%s) at %s, back after %v", role, proc, k.at.Format("15:04:05.000"), k.back.Sub(k.at).Round(time.Millisecond))
	}
	lastBack := kills[len(kills)-1].back
	time.Sleep(5 * time.Second)
	f.stop.Store(true)
	go func() { // retries of ids not yet acknowledged stop well inside the bound
		time.Sleep(time.Until(lastBack.Add(settleBound - 15*time.Second)))
		f.giveUp.Store(true)
	}()
	workers.Wait()
	for time.Now().Before(lastBack.Add(settleBound)) && f.sweep() > 0 {
		time.Sleep(time.Second)
	}
	close(watchDone)
	<-watching
	f.sweep() // the newest status of every order not final

	f.check(t, kills)
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

// check holds the run to its promises.
func (f *splitFlow) check(t *testing.T, kills []killRound) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.unexpected {
		t.Error(u)
	}
	// A kill of the trade server or the executor can leave an order undecided (inDoubtSettles).
	exposed := func(o *flowOrder) bool {
		for _, k := range kills {
			if (k.role == "sim" || k.role == "executor") && o.acked.After(k.at.Add(-10*time.Second)) && o.acked.Before(k.back.Add(5*time.Second)) {
				return true
			}
		}
		return false
	}
	deadline := func(o *flowOrder) time.Time {
		d := o.acked.Add(settleBound)
		for _, k := range kills {
			if o.final.IsZero() || k.at.Before(o.final) {
				if b := k.back.Add(settleBound); b.After(d) {
					d = b
				}
			}
		}
		return d
	}
	byStatus := map[string]int{}
	codes := map[int]int{}
	tolerated := map[string]bool{}
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
		case !o.final.IsZero():
			if o.final.After(deadline(o)) {
				t.Errorf("order %s became %s at %s, after its bound %s", o.id, o.status, o.final.Format("15:04:05.000"),
					deadline(o).Format("15:04:05.000"))
			}
		case !inDoubtSettles && exposed(o) && (o.status == string(trading.StatusInDoubt) || o.status == string(trading.StatusAccepted)):
			tolerated[o.id] = true
		default:
			t.Errorf("acknowledged order %s (%s at %s) is %s (code %d), not FILLED or REJECTED within 60 s of the roles' return",
				o.id, o.answer, o.acked.Format("15:04:05.000"), o.status, o.code)
		}
	}
	if acked < 50 {
		t.Errorf("only %d orders acknowledged: the flow did not run", acked)
	}

	// The trade server's positions, by the tag each operation's send carries in its comment.
	ctx := context.Background()
	tags := map[string]*flowOrder{} // (login, tag) → order
	byID := map[string]*flowOrder{}
	for _, o := range f.orders {
		byID[fmt.Sprint(o.login, "/", o.id)] = o
	}
	rows, err := f.run.pg.Query(ctx, `SELECT login, tag, client_order_id FROM rm.operations WHERE login IN (1001, 1002)`)
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
	for _, login := range []int64{1001, 1002} {
		ps, err := f.run.port.Positions(ctx, login)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			o := tags[fmt.Sprint(login, "/", trading.TagOf(p.Comment))]
			if o == nil {
				t.Errorf("position %d of %d (comment %q) belongs to no order of the run", p.Ticket, login, p.Comment)
				continue
			}
			executed[o]++
		}
	}
	undecidedExecuted := 0
	for _, o := range f.orders {
		n := executed[o]
		switch {
		case n > 1:
			t.Errorf("order %s executed %d times on the trade server", o.id, n)
		case o.status == string(trading.StatusFilled) && n != 1:
			t.Errorf("order %s is FILLED but the trade server holds %d positions of it", o.id, n)
		case o.status == string(trading.StatusRejected) && n != 0:
			t.Errorf("order %s is REJECTED (code %d) but the trade server executed it", o.id, o.code)
		case tolerated[o.id] && n == 1:
			undecidedExecuted++
		}
	}
	var ids []string
	for id := range tolerated {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var cs []string
	for c, n := range codes {
		cs = append(cs, fmt.Sprintf("%d×%d", c, n))
	}
	sort.Strings(cs)
	t.Logf("%d orders, %d acknowledged: %v; REJECTED codes %s; %d same-id resends", len(f.orders), acked, byStatus,
		strings.Join(cs, " "), f.resends)
	if len(ids) > 0 {
		t.Logf("%d orders left undecided by a kill of the trade server or the executor (issue 17 item 1 settles them; "+
			"%d of them executed, once): %s", len(ids), undecidedExecuted, strings.Join(ids, " "))
	}
}
