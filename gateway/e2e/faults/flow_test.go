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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
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

// orderFlow places MARKET orders from a few clients until stopped, half with ACK and half
// with RESULT, each retried with the same newClientOrderId until it is acknowledged (HTTP 200
// ACCEPTED or FILLED), as the spec tells clients to; every acknowledged order is sent once
// more at once (a retry must be answered from its record and trade nothing).
type orderFlow struct {
	t      *testing.T
	c      *gwclient.Client
	logins []int64
	prefix string
	stop   chan struct{}
	wg     sync.WaitGroup
	began  time.Time

	mu      sync.Mutex
	acked   []string
	refused map[int]int // answers that were not acknowledgements, by code (0: transport error)
}

// startFlow starts workers clients placing 0.01 BTCUSD on logins.
func startFlow(t *testing.T, c *gwclient.Client, logins []int64, prefix string, workers int) *orderFlow {
	f := &orderFlow{t: t, c: c, logins: logins, prefix: prefix, stop: make(chan struct{}), refused: map[int]int{},
		began: time.Now()}
	for w := range workers {
		f.wg.Add(1)
		go f.run(w)
	}
	return f
}

func (f *orderFlow) run(w int) {
	defer f.wg.Done()
	for i := 0; ; i++ {
		select {
		case <-f.stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
		coid := fmt.Sprintf("%s-%d-%d", f.prefix, w, i)
		p := url.Values{"login": {strconv.FormatInt(f.logins[(w+i)%len(f.logins)], 10)}, "symbol": {"BTCUSD"},
			"type": {"MARKET"}, "side": {"BUY"}, "volume": {"0.01"}, "newClientOrderId": {coid}}
		if i%2 == 1 {
			p.Set("newOrderRespType", "RESULT")
		}
		if !f.untilAcked(p) {
			return
		}
		f.mu.Lock()
		f.acked = append(f.acked, coid)
		f.mu.Unlock()
		if !f.untilAcked(p) { // the same id again: answered from its record
			return
		}
	}
}

// untilAcked sends p until it is acknowledged; false when the order was refused outright (a
// 4xx: the test has failed) or no acknowledgement came within 2 minutes.
func (f *orderFlow) untilAcked(p url.Values) bool {
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		res, err := f.c.Signed(ctx, http.MethodPost, "/v1/order", p, gwclient.InBody)
		cancel()
		var body struct {
			Code          int    `json:"code"`
			Status        string `json:"status"`
			ClientOrderID string `json:"clientOrderId"`
		}
		if err == nil {
			_ = json.Unmarshal(res.Body, &body)
		}
		switch {
		case err == nil && res.Status == http.StatusOK && (body.Status == "ACCEPTED" || body.Status == "FILLED"):
			if body.ClientOrderID != p.Get("newClientOrderId") {
				f.t.Errorf("answer for %s names %q", p.Get("newClientOrderId"), body.ClientOrderID)
			}
			return true
		case err == nil && res.Status < 500:
			f.t.Errorf("order %s refused: %d %s", p.Get("newClientOrderId"), res.Status, res.Body)
			return false
		}
		f.mu.Lock()
		f.refused[body.Code]++
		f.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
	f.t.Errorf("order %s not acknowledged within 2 minutes", p.Get("newClientOrderId"))
	return false
}

// finish stops new orders, lets every client get its current one acknowledged, and returns
// the acknowledged client order ids.
func (f *orderFlow) finish() []string {
	close(f.stop)
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t.Logf("%d orders acknowledged in %s; answers meanwhile that were not, by code: %v", len(f.acked),
		time.Since(f.began).Round(time.Second), f.refused)
	return append([]string(nil), f.acked...)
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
func checkExactlyOnce(t *testing.T, svc *apptest.Service, s *sim.Sim, logins []int64, before int, acked []string) {
	t.Helper()
	ctx := context.Background()
	if len(acked) == 0 {
		t.Fatal("no order was acknowledged")
	}
	var last string
	apptest.Eventually(t, 120*time.Second, "every acknowledged order FILLED in the read model", func() bool {
		var filled int
		if err := svc.PG.QueryRow(ctx, `SELECT count(*) FROM rm.operations WHERE client_order_id = ANY($1)
			AND status = 'FILLED'`, acked).Scan(&filled); err != nil {
			last = err.Error()
			return false
		}
		last = fmt.Sprintf("%d of %d FILLED", filled, len(acked))
		return filled == len(acked)
	})
	t.Log(last)
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
