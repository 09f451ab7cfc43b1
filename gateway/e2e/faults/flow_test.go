//go:build faults

package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/mt5/sim"
	"tradesvc/infra/testenv"
)

// testRunDir is the data directory of the shared test servers (infra/local/*.sh DATA_DIR):
// TRADESVC_TEST_RUN_DIR, else .run/test of this checkout. A test that stops or restarts a
// server refuses to go on when the directory holds no such server (it would create one).
func testRunDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("TRADESVC_TEST_RUN_DIR")
	if dir == "" {
		root, err := filepath.Abs("../../..")
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, ".run/test")
	}
	if _, err := os.Stat(filepath.Join(dir, "pg", "PG_VERSION")); err != nil {
		t.Fatalf("no test servers under %s (set TRADESVC_TEST_RUN_DIR): %v", dir, err)
	}
	return dir
}

// flow places MARKET orders of 0.01 BTCUSD until it is finished, as clients that follow the
// spec do: half with ACK and half with RESULT, each sent again with the same
// newClientOrderId, to the next gateway, until the answer is definite (place): the order's
// status with HTTP 200, or a recorded order's final refusal. What says nothing definite (no
// answer, a 5xx, -1021, IN_DOUBT, the execution path's own refusal) is retried; any other
// answer is unexpected and fails the test. An answer carrying the order's status acknowledges it (it is recorded). Every order
// is sent once more at once after its definite answer, to the next gateway: a client that
// lost the answer. That copy is answered from the record and must trade nothing.
type flow struct {
	t       *testing.T
	clients []*gwclient.Client // the gateways; attempts of one order go round them
	logins  []int64
	prefix  string
	pause   time.Duration // between two orders of a worker
	began   time.Time
	wg      sync.WaitGroup
	stop    atomic.Bool  // no new ids
	giveUp  atomic.Bool  // no more retries either
	workers atomic.Int64 // how many workers were started; numbers the next one

	mu         sync.Mutex
	orders     []*flowOrder
	unexpected []string
	errors     map[int]int // answers other than HTTP 200, by code (0: no answer at all)
	resends    int         // same-id sends after the first
}

// flowOrder is one client order id of a flow and what became of it.
type flowOrder struct {
	id     string
	login  int64
	acked  time.Time // zero: never acknowledged
	answer string    // the status its acknowledgement carried
	// Filled in by the split run's watcher (GET /v1/order): the newest status and code, and
	// when it was first seen FILLED or REJECTED.
	status string
	code   int
	final  time.Time
	// seen holds when each answer was first seen: the error codes and statuses of answers to
	// its placement ("code -5015", "answered REJECTED"), and the statuses GET /v1/order
	// answered, with their code when they carried one ("IN_DOUBT", "REJECTED -5015").
	seen map[string]time.Time
}

// saw notes the first time an answer was seen (the flow's mutex held).
func (o *flowOrder) saw(answer string) {
	if _, ok := o.seen[answer]; !ok {
		o.seen[answer] = time.Now()
	}
}

// orderAnswer is what the tests read of an answer about an order.
type orderAnswer struct {
	Status        string `json:"status"`
	Code          int    `json:"code"`
	ClientOrderID string `json:"clientOrderId"`
	Msg           string `json:"msg"`
	MT5RetCode    int    `json:"mt5RetCode"`
}

// startFlow starts workers clients placing orders on logins through clients, a worker's next
// order pause after its last was acknowledged. Nothing of it outlives the test.
func startFlow(t *testing.T, clients []*gwclient.Client, logins []int64, prefix string, workers int, pause time.Duration) *flow {
	f := &flow{t: t, clients: clients, logins: logins, prefix: prefix, pause: pause, began: time.Now(), errors: map[int]int{}}
	for range workers {
		f.add(time.Time{})
	}
	t.Cleanup(func() { // also when the test failed midway
		f.stop.Store(true)
		f.giveUp.Store(true)
		f.wg.Wait()
	})
	return f
}

// add starts one more worker, placing new orders until the flow is finished or, when until
// is not zero, until then; like every worker, it gets its last order a definite answer.
func (f *flow) add(until time.Time) {
	w := int(f.workers.Add(1) - 1)
	f.wg.Add(1)
	go f.run(w, until)
}

func (f *flow) run(w int, until time.Time) {
	defer f.wg.Done()
	for i := 0; !f.stop.Load() && (until.IsZero() || time.Now().Before(until)); i++ {
		o := &flowOrder{id: fmt.Sprintf("%s-%d-%d", f.prefix, w, i), login: f.logins[(w+i)%len(f.logins)],
			seen: map[string]time.Time{}}
		p := url.Values{"login": {strconv.FormatInt(o.login, 10)}, "symbol": {"BTCUSD"}, "type": {"MARKET"},
			"side": {"BUY"}, "volume": {"0.01"}, "newClientOrderId": {o.id}}
		if i%2 == 1 {
			p.Set("newOrderRespType", "RESULT")
		}
		f.mu.Lock()
		f.orders = append(f.orders, o)
		f.mu.Unlock()
		gw := w + i
		if f.untilAnswered(o, p, gw) {
			f.resent()
			f.place(o, p, gw+1) // the same id again: answered from its record
		}
		time.Sleep(f.pause)
	}
}

// untilAnswered sends p, from gateway gw on, until an answer settles what a client does
// next (place), retries are given up, or 2 minutes have passed (an error); it reports whether
// the order was acknowledged.
func (f *flow) untilAnswered(o *flowOrder, p url.Values, gw int) bool {
	deadline := time.Now().Add(2 * time.Minute)
	for attempt := 0; !f.giveUp.Load(); attempt++ {
		if time.Now().After(deadline) {
			f.note("order %s without a definite answer within 2 minutes", o.id)
			break
		}
		if attempt > 0 {
			f.resent()
		}
		if f.place(o, p, gw+attempt) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return !o.acked.IsZero()
}

// place sends p once to gateway gw (modulo their number) and notes the answer. An answer
// that carries the order's status acknowledges it (the service recorded it): HTTP 200, or the
// error of a recorded order (REJECTED, or IN_DOUBT with -5008/-5009). done is true when the
// client is not to send it again: HTTP 200, a final refusal (REJECTED with the trade
// server's mt5RetCode), or an unexpected answer. As the spec tells clients, the same id is
// sent again while the order is unknown (IN_DOUBT), after the execution path's own refusal
// (REJECTED -1000 or -5015 without mt5RetCode: it did not execute, and the retry is sent as a
// fresh attempt), and when it was not recorded, or not known to be (no answer, a 5xx without
// status, -1021).
func (f *flow) place(o *flowOrder, p url.Values, gw int) (done bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := f.clients[gw%len(f.clients)].Signed(ctx, http.MethodPost, "/v1/order", p, gwclient.InBody)
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.errors[0]++
		o.saw("no answer")
		return false // the gateway is down or the answer was lost
	}
	var a orderAnswer
	_ = json.Unmarshal(res.Body, &a)
	if res.Status != http.StatusOK {
		f.errors[a.Code]++
		o.saw(fmt.Sprintf("code %d", a.Code))
	}
	if a.Status != "" {
		o.saw("answered " + a.Status)
		if a.ClientOrderID != o.id {
			f.unexpected = append(f.unexpected, fmt.Sprintf("%s: answered for %q: %s", o.id, a.ClientOrderID, res.Body))
		}
		if o.acked.IsZero() {
			o.acked, o.answer = time.Now(), a.Status
		}
		// A refusal by the execution path itself (REJECTED without mt5RetCode: -1000 did not
		// execute, -5015 never left) is sent again with its id: the spec sends it afresh.
		return res.Status == http.StatusOK || a.Status == string(trading.StatusRejected) && a.MT5RetCode != 0
	}
	if res.Status >= 500 || a.Code == -1021 {
		return false // -1000, -1001, -1008, -5009, -5015 before anything was recorded
	}
	f.unexpected = append(f.unexpected, fmt.Sprintf("%s: unexpected answer %d %s", o.id, res.Status, res.Body))
	return true
}

// history lists the answers order id met, in the order they were first seen.
func (f *flow) history(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range f.orders {
		if o.id != id {
			continue
		}
		seen := make([]string, 0, len(o.seen))
		for answer := range o.seen {
			seen = append(seen, answer)
		}
		slices.SortFunc(seen, func(a, b string) int { return o.seen[a].Compare(o.seen[b]) })
		for i, answer := range seen {
			seen[i] = answer + " at " + o.seen[answer].Format("15:04:05.000")
		}
		return fmt.Sprintf("acknowledged %s at %s; %s", o.answer, o.acked.Format("15:04:05.000"), strings.Join(seen, ", "))
	}
	return "none"
}

// isFinal reports whether a market order's status is final.
func isFinal(status string) bool {
	return status == string(trading.StatusFilled) || status == string(trading.StatusRejected)
}

func (f *flow) resent() {
	f.mu.Lock()
	f.resends++
	f.mu.Unlock()
}

func (f *flow) note(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unexpected = append(f.unexpected, fmt.Sprintf(format, args...))
}

// finish stops new ids and waits for the workers: each gets a definite answer for its current
// order, retrying until giveUpAt (zero: as long as untilAnswered does). It fails the test for
// every unexpected answer, and returns the acknowledged client order ids.
func (f *flow) finish(giveUpAt time.Time) []string {
	f.stop.Store(true)
	if !giveUpAt.IsZero() {
		timer := time.AfterFunc(time.Until(giveUpAt), func() { f.giveUp.Store(true) })
		defer timer.Stop()
	}
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, u := range f.unexpected {
		f.t.Error(u)
	}
	var acked []string
	for _, o := range f.orders {
		if !o.acked.IsZero() {
			acked = append(acked, o.id)
		}
	}
	f.t.Logf("%d orders, %d acknowledged in %s, %d same-id resends; answers other than HTTP 200, by code: %v",
		len(f.orders), len(acked), time.Since(f.began).Round(time.Second), f.resends, f.errors)
	return acked
}

// fundAndCount deposits margin for every order of a flow on the logins and returns how many
// positions the trade server holds for them.
func fundAndCount(t *testing.T, s *sim.Sim, logins []int64) int {
	t.Helper()
	n := 0
	for _, l := range logins {
		if _, err := s.Deposit(l, dec.MustParse("1000000")); err != nil {
			t.Fatal(err)
		}
		ps, err := s.Positions(context.Background(), l)
		if err != nil {
			t.Fatal(err)
		}
		n += len(ps)
	}
	return n
}

// waitTradable waits until the gateway takes orders (the executor's heartbeat read).
func waitTradable(t *testing.T, c *gwclient.Client) {
	t.Helper()
	apptest.Eventually(t, 60*time.Second, "orders accepted", func() bool {
		res, err := c.Signed(context.Background(), http.MethodPost, "/v1/order", url.Values{"login": {"1001"},
			"symbol": {"BTCUSD"}, "type": {"NOPE"}, "side": {"BUY"}, "volume": {"0.01"}}, gwclient.InBody)
		if err != nil {
			return false
		}
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(res.Body, &e)
		return e.Code != -5015
	})
}

// checkExactlyOnce holds the service to what an outage or a crash must not break, once the
// flow has ended: every acknowledged order ends FILLED, with its deal and its position in the
// read models; no order traded twice (one deal per order in the read models, and the trade
// server holds exactly one new position per acknowledged order, as many as the read models
// show open); and the read models equal the ones rebuilt from the Kafka log up to the
// positions they stored (tradesvc replay --verify): nothing missing, nothing doubled.
func checkExactlyOnce(t *testing.T, svc *apptest.Service, s *sim.Sim, logins []int64, before int, f *flow) {
	t.Helper()
	ctx := context.Background()
	acked := f.finish(time.Time{})
	if len(acked) == 0 {
		t.Fatal("no order was acknowledged")
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var filled int
		var others []string
		rows, err := svc.PG.Query(ctx, `SELECT o.coid, coalesce(r.status, 'no row'), coalesce(r.code, 0),
				coalesce(r.retcode, 0), coalesce(r.msg, ''), coalesce(r.attempt, 0)
			FROM unnest($1::text[]) AS o(coid) LEFT JOIN rm.operations r ON r.client_order_id = o.coid`, acked)
		if err == nil {
			var coid, status, msg string
			var code, retcode, attempt int
			_, err = pgx.ForEachRow(rows, []any{&coid, &status, &code, &retcode, &msg, &attempt}, func() error {
				if status == "FILLED" {
					filled++
				} else if len(others) < 10 {
					others = append(others, fmt.Sprintf("%s: %s code %d retcode %d %q attempt %d; answers %s", coid,
						status, code, retcode, msg, attempt, f.history(coid)))
				}
				return nil
			})
		}
		if err == nil && filled == len(acked) {
			t.Logf("every one of %d acknowledged orders FILLED in the read model", filled)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes %d of %d acknowledged orders FILLED in the read model (%v); not: %v", filled,
				len(acked), err, others)
		}
	}
	var ops, withDeal, withPosition, deals int
	if err := svc.PG.QueryRow(ctx, `SELECT count(*), count(d.deal_id), count(p.position_id),
		(SELECT count(*) FROM rm.deals d2 JOIN rm.operations o2 ON d2.login = o2.login AND d2.tag = o2.tag
			WHERE o2.client_order_id = ANY($1))
		FROM rm.operations o LEFT JOIN rm.deals d ON d.deal_id = o.deal_id
		LEFT JOIN rm.positions p ON p.position_id = o.position_id
		WHERE o.client_order_id = ANY($1)`, acked).Scan(&ops, &withDeal, &withPosition, &deals); err != nil {
		t.Fatal(err)
	}
	if ops != len(acked) || withDeal != ops || withPosition != ops || deals != ops {
		t.Errorf("%d acknowledged orders: %d operations, %d with their deal, %d with their position, %d deals by their tags",
			len(acked), ops, withDeal, withPosition, deals)
	}
	time.Sleep(time.Second) // anything still on its way to the trade server would show
	onServer := -before
	for _, l := range logins {
		ps, err := s.Positions(ctx, l)
		if err != nil {
			t.Fatal(err)
		}
		onServer += len(ps)
	}
	if onServer != len(acked) {
		t.Errorf("the trade server opened %d positions for %d acknowledged orders", onServer, len(acked))
	}
	var open int
	if err := svc.PG.QueryRow(ctx, `SELECT count(*) FROM rm.positions WHERE login = ANY($1) AND open`, logins).
		Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != onServer+before {
		t.Errorf("the read models show %d open positions, the trade server holds %d", open, onServer+before)
	}
	vctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	rep, err := app.VerifyReplay(vctx, svc.Config, testenv.Logger(), app.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rep.Differences {
		t.Error(d.String())
	}
	if !rep.Equal || rep.EventsApplied == 0 {
		t.Errorf("the read models rebuilt from the log: equal %v after %d events (positions from %s)", rep.Equal,
			rep.EventsApplied, rep.PositionsFrom)
	}
	for _, tb := range rep.Tables {
		if tb.Live != tb.Replayed {
			t.Errorf("%s: %d live rows, %d rebuilt from the log", tb.Table, tb.Live, tb.Replayed)
		}
	}
}

// pgPort is the test Postgres' port.
func pgPort(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(testenv.PG(t))
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// killPostgres9 kills the test Postgres with SIGKILL, the postmaster and every backend at
// once (a crash: what was committed survives only through the WAL), and waits until its port
// is closed.
func killPostgres9(t *testing.T, dir, port string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "pg", "postmaster.pid"))
	if err != nil {
		t.Fatalf("postmaster pid: %v", err)
	}
	var pid int
	if _, err := fmt.Sscanf(string(raw), "%d", &pid); err != nil || pid <= 1 {
		t.Fatalf("postmaster pid %q: %v", raw, err)
	}
	pids := append(childrenOf(pid), pid)
	for _, p := range pids {
		if err := syscallKill9(p); err != nil && !errors.Is(err, errNoProcess) {
			t.Fatalf("kill -9 %d: %v", p, err)
		}
	}
	apptest.Eventually(t, 15*time.Second, "Postgres gone", func() bool {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return false
		}
		return true
	})
	t.Logf("killed Postgres with SIGKILL (%d processes)", len(pids))
}

// startPostgres starts the test Postgres again (crash recovery), retrying while the killed
// one's last processes let go of its port and memory.
func startPostgres(t *testing.T, dir, port string) {
	t.Helper()
	var err error
	for attempt := 0; attempt < 10; attempt++ {
		if err = runLocal(dir, "postgres.sh", "start", port); err == nil {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("Postgres did not start again: %v", err)
}

var errNoProcess = syscall.ESRCH

func syscallKill9(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// childrenOf lists the processes whose parent is pid (from /proc).
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after its closing paren.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		var state string
		var ppid int
		if _, err := fmt.Sscanf(s[i+1:], " %s %d", &state, &ppid); err == nil && ppid == pid {
			out = append(out, child)
		}
	}
	return out
}

// runLocal runs infra/local/<script> ACTION DIR PORT (the scripts of this checkout).
func runLocal(dir, script, action, port string) error {
	root, err := filepath.Abs("../../..")
	if err != nil {
		return err
	}
	out, err := exec.Command("bash", filepath.Join(root, "infra/local", script), action, dir, port).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", script, action, err, out)
	}
	return nil
}
