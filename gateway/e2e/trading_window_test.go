package e2e_test

import (
	"maps"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
)

// An order the executor could not send within the dispatch window is stored REJECTED with
// -1000 and nothing executes; a retry with the same newClientOrderId is sent fresh (the next
// attempt) and fills: the spec's REJECTED (no retcode) → FILLED row.
func TestDispatchWindowRejectsThenARetryFills(t *testing.T) {
	vars := apptest.Vars(t)
	late := maps.Clone(vars)
	late["TRADESVC_DISPATCH_WINDOW"] = "1ns" // every operation is already too old when the executor sees it
	first := apptest.Launch(t, late)
	e := &env{svc: apptest.Serve(t, first)}
	e.svc.WaitForSymbols(t, 60*time.Second, "BTCUSD")
	e.svc.WaitForQuote(t, 60*time.Second, "BTCUSD")
	e.svc.WaitForAccount(t, 60*time.Second, loginReal1)
	tr := e.trader(t)
	tr.waitExecutionPath(t)
	p := market(loginReal1, "BTCUSD", "BUY", "0.01", "newClientOrderId", "window-1", "newOrderRespType", "RESULT")
	wantOpErr(t, tr.post(t, "/v1/order", p), 503, -1000, "REJECTED", "window-1", loginReal1, 0)
	o := tr.awaitOrder(t, loginReal1, "window-1", "REJECTED")
	if num(o, "code") != -1000 {
		t.Fatalf("GET /v1/order %v, want code -1000", o)
	}
	if n := e.simPositionCount(t, loginReal1, "BTCUSD"); n != 0 {
		t.Fatalf("a rejected-unqueued order executed: %d positions", n)
	}
	first.Stop(t)

	second := apptest.Launch(t, vars) // the same stores, the default one-minute window
	e = &env{svc: apptest.Serve(t, second)}
	tr = &trader{e: e, c: e.svc.Client(tr.key), key: tr.key}
	e.svc.WaitForQuote(t, 60*time.Second, "BTCUSD")
	tr.waitExecutionPath(t)
	m := obj(t, tr.post(t, "/v1/order", p), 200)
	if str(m, "status") != "FILLED" || str(m, "clientOrderId") != "window-1" {
		t.Fatalf("retry after -1000: %v", m)
	}
	if n := e.simPositionCount(t, loginReal1, "BTCUSD"); n != 1 {
		t.Fatalf("the retry made %d trades, want 1", n)
	}
	// Once filled, a further retry is the stored FILLED, never a third attempt.
	m = obj(t, tr.post(t, "/v1/order", p), 200)
	if str(m, "status") != "FILLED" || e.simPositionCount(t, loginReal1, "BTCUSD") != 1 {
		t.Fatalf("second retry %v", m)
	}
}
