package e2e_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/infra/config"
)

// Issue 17 item 2: the dispatch window closes while no executor runs. The service runs as
// separate processes: a simulator, a gateway with the projector (its dispatch window three
// seconds), and an executor with the default window of a minute. The executor stops; an order
// queued meanwhile (its heartbeat is still fresh) is stored REJECTED -1000 by the gateway's
// sweeper within seconds. The executor comes back: the command is well inside its own window,
// yet it is never sent (the sweeper's claim in cmd.executions stops it); a same-id retry is a
// fresh attempt that fills. The simulator holds exactly one position.
func TestDispatchWindowClosesWhileTheExecutorIsDown(t *testing.T) {
	vars := apptest.Vars(t)
	simProc, simAddr := apptest.LaunchSim(t, vars)
	gwVars := maps.Clone(vars)
	gwVars["TRADESVC_ROLES"] = "gateway,projector"
	if slices.Contains(config.AllRoles(), "relay") { // the relay, where it is a role of its own, stays up
		gwVars["TRADESVC_ROLES"] += ",relay"
	}
	gwVars["TRADESVC_SIM_ADDR"] = simAddr
	gwVars["TRADESVC_DISPATCH_WINDOW"] = "3s"
	e := &env{svc: apptest.Serve(t, apptest.Launch(t, gwVars))}
	execVars := maps.Clone(vars)
	execVars["TRADESVC_ROLES"] = "executor"
	execVars["TRADESVC_SIM_ADDR"] = simAddr
	execVars["TRADESVC_METRICS_LISTEN"] = ""
	first := apptest.Launch(t, execVars)
	e.svc.WaitForSymbols(t, 60*time.Second, "BTCUSD")
	e.svc.WaitForAccount(t, 60*time.Second, loginReal1)
	tr := e.trader(t)
	tr.waitExecutionPath(t)
	positions := func() int {
		ps, err := simProc.App.Sim().Positions(context.Background(), loginReal1)
		if err != nil {
			t.Fatal(err)
		}
		return len(ps)
	}
	before := positions()

	first.Stop(t)
	// Its heartbeat stays fresh for a while: the gateway still queues orders.
	p := market(loginReal1, "BTCUSD", "BUY", "0.01", "newClientOrderId", "sweep-window-1")
	m := obj(t, tr.post(t, "/v1/order", p), 200)
	if str(m, "status") != "ACCEPTED" {
		t.Fatalf("order queued with the executor stopped: %v", m)
	}
	queued := time.Now()
	o := tr.awaitOrder(t, loginReal1, "sweep-window-1", "REJECTED")
	if num(o, "code") != -1000 {
		t.Fatalf("GET /v1/order %v, want code -1000", o)
	}
	absent(t, o, "mt5RetCode")
	t.Logf("REJECTED -1000 %v after it was queued (window 3s)", time.Since(queued).Round(100*time.Millisecond))
	if n := positions(); n != before {
		t.Fatalf("%d positions opened with no executor running", n-before)
	}

	apptest.Launch(t, execVars) // the executor returns, its window a minute
	tr.waitExecutionPath(t)
	m = obj(t, tr.post(t, "/v1/order", p), 200)
	if s := str(m, "status"); s != "ACCEPTED" && s != "FILLED" {
		t.Fatalf("retry after the sweep: %v, want a fresh attempt", m)
	}
	tr.awaitOrder(t, loginReal1, "sweep-window-1", "FILLED") // once the executor has joined its group
	// The retry's attempt comes after the swept one in the login's partition: by now the
	// returning executor has read the swept command too, and not sent it.
	if n := positions(); n != before+1 {
		t.Fatalf("%d positions opened, want the retry's alone", n-before)
	}
}
