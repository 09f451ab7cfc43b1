//go:build faults

// Package faults holds the crash and outage tests of the order path: processes killed with
// SIGKILL mid-order, and the Kafka broker stopped while clients place orders. They stop
// shared servers, so `make test` runs them on their own after the main suite
// (go test -tags faults ./gateway/e2e/faults/), never beside other packages.
package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/config"
	"tradesvc/infra/keys"
	"tradesvc/infra/leakcheck"
	"tradesvc/infra/mt5/sim"
)

// childEnv marks the test binary re-executed as a tradesvc process (so the parent can kill it
// with SIGKILL, which an in-process role cannot be).
const childEnv = "TRADESVC_FAULTS_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "serve" {
		os.Exit(serveChild())
	}
	leakcheck.Main(m)
}

// serveChild runs tradesvc with the configuration of its environment until killed.
func serveChild() int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	cfg, err := config.FromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "config:", err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start:", err)
		return 1
	}
	err = a.Run(ctx)
	if cerr := a.Close(); cerr != nil {
		fmt.Fprintln(os.Stderr, "close:", cerr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "run:", err)
		return 1
	}
	return 0
}

// child starts the test binary as a tradesvc process with vars as its environment.
func child(t *testing.T, vars map[string]string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=serve")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child: %v", err)
	}
	t.Cleanup(func() { stopGracefully(cmd.Process) })
	return cmd
}

// stopGracefully ends a child with SIGTERM, so that it leaves its consumer groups and the
// test's cleanup can delete them, and with SIGKILL when it has not exited within 10 s. A
// child killed and reaped already is left alone.
func stopGracefully(p *os.Process) {
	if p.Signal(syscall.SIGTERM) != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		_, _ = p.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.Kill()
		<-done
	}
}

// kill9 kills a child process with SIGKILL and reaps it.
func kill9(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9: %v", err)
	}
	_, _ = cmd.Process.Wait()
}

type order struct {
	Status        string `json:"status"`
	OrderID       int64  `json:"orderId"`
	ClientOrderID string `json:"clientOrderId"`
	Code          int    `json:"code"`
}

func getOrder(t *testing.T, c *gwclient.Client, login int64, coid string) (order, int) {
	t.Helper()
	res, err := c.Signed(context.Background(), http.MethodGet, "/v1/order",
		url.Values{"login": {strconv.FormatInt(login, 10)}, "origClientOrderId": {coid}}, gwclient.InQuery)
	if err != nil {
		t.Fatalf("GET /v1/order: %v", err)
	}
	var o order
	_ = json.Unmarshal(res.Body, &o)
	return o, res.Status
}

func unlimited(t *testing.T, s *apptest.Service) apptest.Key {
	return s.CreateKeyWithLimits(t, keys.CreateParams{Logins: []int64{1001, 1002},
		Limits: keys.Limits{WeightPerMinute: 1 << 30, Orders10s: 1 << 30, Orders1m: 1 << 30}})
}

// readyToTrade returns a client of an unlimited key for logins 1001 and 1002 once the
// service knows BTCUSD, has its quote and the account of login 1001.
func readyToTrade(t *testing.T, svc *apptest.Service) *gwclient.Client {
	t.Helper()
	c := svc.Client(unlimited(t, svc))
	svc.WaitForSymbols(t, 60*time.Second, "BTCUSD")
	svc.WaitForQuote(t, 60*time.Second, "BTCUSD")
	svc.WaitForAccount(t, 60*time.Second, 1001)
	return c
}

// simPositions counts the positions the trade server holds for login.
func simPositions(t *testing.T, a *app.App, login int64) func() int {
	return func() int {
		ps, err := a.Sim().Positions(context.Background(), login)
		if err != nil {
			t.Fatal(err)
		}
		return len(ps)
	}
}

// The executor is killed with SIGKILL after the trade server executed an order and before
// the executor recorded the outcome; a new executor reconciles the order by its tag: FILLED,
// and the trade server holds exactly one position for it.
func TestExecutorKilledBetweenSentAndOutcomeResolvesWithoutASecondTrade(t *testing.T) {
	ctx := context.Background()
	vars := apptest.Vars(t)
	simProc, simAddr := apptest.LaunchSim(t, vars)
	svcVars := maps.Clone(vars)
	svcVars["TRADESVC_ROLES"] = "gateway,projector,relay"
	svcVars["TRADESVC_SIM_ADDR"] = simAddr
	svc := apptest.Serve(t, apptest.Launch(t, svcVars))
	execVars := maps.Clone(vars)
	execVars["TRADESVC_ROLES"] = "executor"
	execVars["TRADESVC_SIM_ADDR"] = simAddr
	execVars["TRADESVC_METRICS_LISTEN"] = ""
	first := child(t, execVars)

	c := readyToTrade(t, svc)
	positions := simPositions(t, simProc.App, 1001)
	before := positions()

	// Hold every answer 20 s after the execution: the executor is killed in between.
	if err := simProc.App.Sim().SetFault(sim.Fault{Mode: sim.FaultNone, AnswerDelay: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	apptest.Eventually(t, 60*time.Second, "the executor alive (orders accepted)", func() bool {
		res, err := c.Signed(ctx, http.MethodPost, "/v1/order", url.Values{"login": {"1001"}, "symbol": {"BTCUSD"},
			"type": {"MARKET"}, "side": {"BUY"}, "volume": {"0.01"}, "newClientOrderId": {"kill-1"}}, gwclient.InBody)
		return err == nil && res.Status == http.StatusOK
	})
	apptest.Eventually(t, 30*time.Second, "the order executed on the trade server", func() bool { return positions() == before+1 })
	kill9(t, first)
	if err := simProc.App.Sim().SetFault(sim.Fault{Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	// The executor recorded "sent" and died before the outcome: its row has none.
	var opID string
	apptest.Eventually(t, 30*time.Second, "the operation in the read model", func() bool {
		return svc.PG.QueryRow(ctx, `SELECT operation_id FROM rm.operations WHERE client_order_id = 'kill-1'`).Scan(&opID) == nil
	})
	outcome := func() (bool, bool) {
		var out []byte
		if err := svc.PG.QueryRow(ctx, `SELECT outcome FROM cmd.executions WHERE operation_id = $1`, opID).Scan(&out); err != nil {
			t.Fatalf("read the executor's record of %s: %v", opID, err)
		}
		var o struct {
			Status     string `json:"status"`
			Reconciled bool   `json:"reconciled"`
		}
		if out != nil {
			_ = json.Unmarshal(out, &o)
		}
		return out != nil, o.Status == "FILLED" && o.Reconciled
	}
	if decided, _ := outcome(); decided {
		t.Fatalf("the killed executor recorded an outcome for %s", opID)
	}
	child(t, execVars) // a new executor takes the partition over and finds the "sent" record
	apptest.Eventually(t, 90*time.Second, "the order reconciled FILLED by the new executor", func() bool {
		_, reconciled := outcome()
		return reconciled
	})
	if o, _ := getOrder(t, c, 1001, "kill-1"); o.Status != "FILLED" || o.OrderID == 0 {
		t.Fatalf("GET /v1/order %+v, want FILLED", o)
	}
	time.Sleep(2 * time.Second)
	if n := positions(); n != before+1 {
		t.Fatalf("the trade server holds %d new positions, want exactly 1", n-before)
	}
}

// The Kafka broker is stopped while clients place orders: the first is answered -5009 once
// its append fails (nothing lost: the record stays open); while the log is failing, new
// orders are answered -1000 before anything is recorded (one a second tries the log again:
// -5009 again while it is down). Once the broker is back, retries with the same ids
// converge with exactly one trade each.
func TestKafkaStoppedOrdersAnswer5009AndConvergeOnRetry(t *testing.T) {
	ctx := context.Background()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	kafkaSh := filepath.Join(root, "infra/local/kafka.sh")
	data := testRunDir(t)
	kafka := func(action string) {
		out, err := exec.Command("bash", kafkaSh, action, data, "29092").CombinedOutput()
		if err != nil {
			t.Fatalf("kafka %s: %v\n%s", action, err, out)
		}
	}
	svc := apptest.Start(t)
	c := readyToTrade(t, svc)
	positions := simPositions(t, svc.App, 1002)
	before := positions()
	place := func(coid string) (int, []byte) {
		res, err := c.Signed(ctx, http.MethodPost, "/v1/order", url.Values{"login": {"1002"}, "symbol": {"BTCUSD"},
			"type": {"MARKET"}, "side": {"BUY"}, "volume": {"0.01"}, "newClientOrderId": {coid}}, gwclient.InBody)
		if err != nil {
			t.Fatalf("POST /v1/order: %v", err)
		}
		return res.Status, res.Body
	}
	kafka("stop")
	t.Cleanup(func() { kafka("start") }) // idempotent: leaves the broker running for what follows
	const n = 5
	refused := 0
	for i := range n {
		coid := "kafka-down-" + strconv.Itoa(i)
		status, body := place(coid)
		var e struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(body, &e)
		switch {
		case status == http.StatusServiceUnavailable && e.Code == -5009:
		case i > 0 && status == http.StatusServiceUnavailable && e.Code == -1000:
			refused++
			var recorded bool
			if err := svc.PG.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM cmd.idempotency WHERE client_order_id = $1)`,
				coid).Scan(&recorded); err != nil {
				t.Fatal(err)
			}
			if recorded {
				t.Fatalf("order %d was answered -1000 (nothing was done) and has an idempotency record", i)
			}
		default:
			t.Fatalf("order %d while Kafka is down: %d %s, want 503 -5009 (the first) or -1000", i, status, body)
		}
	}
	if refused == 0 {
		// Each -5009 after the first is a probe, one a second at most, and the orders follow
		// one another without a pause: most must have been refused at once.
		t.Fatalf("no order was refused (-1000) while the log was failing")
	}
	kafka("start")
	apptest.Eventually(t, 120*time.Second, "every retried order FILLED", func() bool {
		done := 0
		for i := range n {
			coid := "kafka-down-" + strconv.Itoa(i)
			if status, _ := place(coid); status != http.StatusOK {
				continue
			}
			if o, _ := getOrder(t, c, 1002, coid); o.Status == "FILLED" {
				done++
			}
		}
		return done == n
	})
	time.Sleep(2 * time.Second)
	if got := positions() - before; got != n {
		t.Fatalf("%d orders made %d trades, want exactly %d", n, got, n)
	}
}
