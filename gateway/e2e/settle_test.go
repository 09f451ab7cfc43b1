package e2e_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/sim"
)

// settleSendTimeout is the send timeout of the service these tests run: its send deadline
// (one more second) passes soon after a send the simulator answers "timeout" at once.
const settleSendTimeout = 2 * time.Second

// settleBound is the bound: after a trade-server fault clears, a same-id retry, or
// the background with no retry at all, reaches a definite answer within it.
const settleBound = 10 * time.Second

// Issue 17 items 1 and 3, over HTTPS against the whole service: what a bot meets when the
// trade server times out or becomes unreachable, and how every unknown resolves itself.
// Positions are counted on the simulator: nothing is ever sent twice.
func TestUnknownOutcomesSettle(t *testing.T) {
	vars := apptest.Vars(t)
	vars["TRADESVC_SEND_TIMEOUT"] = settleSendTimeout.String()
	e := envOn(t, apptest.Serve(t, apptest.Launch(t, vars)), "BTCUSD", "ETHUSD", "DOGEUSD", "XRPUSD")
	tr := e.trader(t)
	tr.waitExecutionPath(t)
	t.Run("a same-id retry after a timeout clears fills, once", func(t *testing.T) { testRetryAfterTimeout(t, e, tr) })
	t.Run("with no retry a timeout settles as not executed", func(t *testing.T) { testQuietTimeoutSettles(t, e, tr) })
	t.Run("an order that executed after all settles FILLED, never sent again", func(t *testing.T) { testExecutedAfterAll(t, e, tr) })
	t.Run("trade server unreachable: -5015 before queueing, nothing settles until it is back", func(t *testing.T) {
		testTradeServerUnreachable(t, e, tr)
	})
}

// inDoubt places a MARKET order under the timeout fault (RESULT: 504 -5008 IN_DOUBT) and
// clears the fault; it returns when the fault cleared.
func (tr *trader) inDoubt(t *testing.T, p url.Values, coid string, login int64) time.Time {
	t.Helper()
	tr.e.setFault(t, sim.Fault{Mode: sim.FaultTimeout})
	wantOpErr(t, tr.post(t, "/v1/order", p), 504, -5008, "IN_DOUBT", coid, login, 0)
	if err := tr.e.svc.App.Sim().SetFault(sim.Fault{Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	return time.Now()
}

// The first finding: after a timeout cleared, the identical request under the same
// newClientOrderId answered -5008 for a day. Now the retry asks the executor to settle the
// attempt; once the trade server confirms it did not execute, the retry is sent as the next
// attempt and fills. Every answer on the way is the IN_DOUBT or the fill; one position.
func testRetryAfterTimeout(t *testing.T, e *env, tr *trader) {
	before := e.simPositionCount(t, loginReal1, "BTCUSD")
	p := market(loginReal1, "BTCUSD", "BUY", "0.01", "newClientOrderId", "settle-retry", "newOrderRespType", "RESULT")
	cleared := tr.inDoubt(t, p, "settle-retry", loginReal1)
	var filled map[string][]byte
	for filled == nil {
		if time.Since(cleared) > settleBound {
			t.Fatalf("the retry did not converge within %v of the fault clearing", settleBound)
		}
		res := tr.post(t, "/v1/order", p)
		switch {
		case res.Status == http.StatusOK:
			m := obj(t, res, 200)
			if str(m, "status") != "FILLED" || num(m, "dealId") == 0 || num(m, "positionId") == 0 || str(m, "clientOrderId") != "settle-retry" {
				t.Fatalf("retry answered %s, want FILLED with its deal and position", res.Body)
			}
			filled = map[string][]byte{"positionId": m["positionId"]}
		case res.Status == http.StatusGatewayTimeout:
			wantOpErr(t, res, 504, -5008, "IN_DOUBT", "settle-retry", loginReal1, 0)
			time.Sleep(200 * time.Millisecond)
		default:
			t.Fatalf("retry answered %d %s, want the IN_DOUBT until it fills", res.Status, res.Body)
		}
	}
	if n := e.simPositionCount(t, loginReal1, "BTCUSD"); n != before+1 {
		t.Fatalf("%d positions opened, want 1", n-before)
	}
	o := tr.awaitOrder(t, loginReal1, "settle-retry", "FILLED")
	if num(o, "dealId") == 0 {
		t.Errorf("GET /v1/order %v, want its deal", o)
	}
	// Filled, a further retry answers the fill: never a third attempt.
	m := obj(t, tr.post(t, "/v1/order", p), 200)
	if str(m, "status") != "FILLED" || e.simPositionCount(t, loginReal1, "BTCUSD") != before+1 {
		t.Fatalf("a retry after the fill: %v", m)
	}
}

// With no retry, the executor settles the timed-out attempt in the background once its
// send deadline has passed and the trade server holds its tag nowhere: REJECTED -1000 ("did
// not execute"), no mt5RetCode, nothing traded. A retry then is a fresh attempt that fills.
func testQuietTimeoutSettles(t *testing.T, e *env, tr *trader) {
	before := e.simPositionCount(t, loginReal2, "ETHUSD")
	p := market(loginReal2, "ETHUSD", "SELL", "0.01", "newClientOrderId", "settle-quiet", "newOrderRespType", "RESULT")
	cleared := tr.inDoubt(t, p, "settle-quiet", loginReal2)
	q := vals("login", itoa(loginReal2), "origClientOrderId", "settle-quiet")
	var o map[string][]byte
	poll(t, settleBound-time.Since(cleared), 100*time.Millisecond, "the timeout settled without a retry", func() bool {
		m := obj(t, tr.get(t, "/v1/order", q), 200)
		if str(m, "status") == "REJECTED" {
			o = map[string][]byte{"code": m["code"], "mt5RetCode": m["mt5RetCode"]}
			return true
		}
		if str(m, "status") != "IN_DOUBT" {
			t.Fatalf("GET /v1/order %v, want IN_DOUBT until settled", m)
		}
		return false
	})
	if string(o["code"]) != "-1000" || o["mt5RetCode"] != nil {
		t.Fatalf("settled with code %s, mt5RetCode %s; want -1000 and none", o["code"], o["mt5RetCode"])
	}
	if n := e.simPositionCount(t, loginReal2, "ETHUSD"); n != before {
		t.Fatalf("%d positions opened by an order that did not execute", n-before)
	}
	m := obj(t, tr.post(t, "/v1/order", p), 200)
	if str(m, "status") != "FILLED" {
		t.Fatalf("retry after the settlement: %v, want a fresh attempt that fills", m)
	}
	if n := e.simPositionCount(t, loginReal2, "ETHUSD"); n != before+1 {
		t.Fatalf("%d positions opened, want 1", n-before)
	}
}

// The trade server timed out, and yet ran the order late (it reached it after all): a retry
// must find that fill by the order's tag and answer it, never send the order again.
func testExecutedAfterAll(t *testing.T, e *env, tr *trader) {
	before := e.simPositionCount(t, loginDemo, "DOGEUSD")
	p := market(loginDemo, "DOGEUSD", "SELL", "0.01", "newClientOrderId", "settle-late", "newOrderRespType", "RESULT")
	cleared := tr.inDoubt(t, p, "settle-late", loginDemo)
	var tag string
	if err := e.svc.PG.QueryRow(context.Background(), `SELECT tag FROM rm.operations WHERE client_order_id = 'settle-late'`).
		Scan(&tag); err != nil {
		t.Fatalf("the operation's tag: %v", err)
	}
	late, err := e.svc.App.Sim().Send(context.Background(), mt5.TradeRequest{Login: loginDemo, Action: mt5.ActionDeal,
		Symbol: "DOGEUSD", Type: trading.OrderSell, Volume: dec.MustParse("0.01"), Comment: trading.WithTag("", tag)})
	if err != nil || late.Retcode != trading.RetDone {
		t.Fatalf("the late execution: %+v, %v", late, err)
	}
	for {
		res := tr.post(t, "/v1/order", p)
		if res.Status == http.StatusOK {
			m := obj(t, res, 200)
			if str(m, "status") != "FILLED" || num(m, "dealId") != late.Deal || num(m, "positionId") != late.Position {
				t.Fatalf("retry answered %s, want the late fill (deal %d, position %d)", res.Body, late.Deal, late.Position)
			}
			break
		}
		wantOpErr(t, res, 504, -5008, "IN_DOUBT", "settle-late", loginDemo, 0)
		if time.Since(cleared) > settleBound {
			t.Fatalf("the retry did not find the late fill within %v", settleBound)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second) // a second send, were there one, would have executed by now
	if n := e.simPositionCount(t, loginDemo, "DOGEUSD"); n != before+1 {
		t.Fatalf("%d positions, want the late execution's alone", n-before)
	}
}

// Issue 17 item 3: with the trade server unreachable and the executor up, TRADE endpoints
// answer -5015 before queueing or charging anything (a retry of a recorded order too); reads
// stay up. An order left IN_DOUBT is not settled while the trade server cannot be asked, however
// late; once it is back, orders are accepted again and the IN_DOUBT settles within the bound.
func testTradeServerUnreachable(t *testing.T, e *env, tr *trader) {
	before := e.simPositionCount(t, loginReal1, "XRPUSD")
	p := market(loginReal1, "XRPUSD", "BUY", "0.01", "newClientOrderId", "settle-link", "newOrderRespType", "RESULT")
	tr.inDoubt(t, p, "settle-link", loginReal1)
	e.setFault(t, sim.Fault{Mode: sim.FaultDisconnect})
	down := time.Now()
	probe := 0
	eventuallyNoMismatch(t, 10*time.Second, "-5015 on POST /v1/order with the trade server unreachable", func() string {
		probe++
		// Each probe its own id: one accepted before the gateway learns of the link is
		// answered by the trade server's disconnect (10031), and trades nothing.
		res := tr.post(t, "/v1/order", market(loginReal1, "XRPUSD", "BUY", "0.01", "newClientOrderId", "link-probe-"+strconv.Itoa(probe)))
		if res.Status != http.StatusServiceUnavailable {
			return string(res.Body)
		}
		wantErr(t, res, 503, -5015)
		return ""
	})
	t.Logf("-5015 %v after the link went down", time.Since(down).Round(100*time.Millisecond))

	orders := func(res interface{ Get(string) string }) int {
		n, _ := strconv.Atoi(res.Get(hdrOrders10))
		return n
	}
	last := tr.get(t, "/v1/openOrders", vals("login", itoa(loginReal1)))
	wantOK(t, last) // reads stay up
	charged := orders(last.Header)
	for _, c := range []struct{ method, path string }{
		{http.MethodPost, "/v1/order"}, {http.MethodDelete, "/v1/allOpenPositions"}, {http.MethodPost, "/v1/batchOrders"},
	} {
		res := tr.send(t, c.method, c.path, market(loginReal1, "XRPUSD", "BUY", "0.01", "newClientOrderId", "link-refused"))
		wantErr(t, res, 503, -5015)
		if n := orders(res.Header); n > charged {
			t.Errorf("%s %s charged the ORDERS bucket: %d, was %d", c.method, c.path, n, charged)
		}
	}
	wantErr(t, tr.get(t, "/v1/order", vals("login", itoa(loginReal1), "origClientOrderId", "link-refused")), 400, -2013)
	res := tr.post(t, "/v1/order", p) // a retry of the IN_DOUBT: the same refusal, nothing asked
	wantErr(t, res, 503, -5015)

	time.Sleep(settleSendTimeout + 2*time.Second) // the send deadline passes while unreachable
	o := obj(t, tr.get(t, "/v1/order", vals("login", itoa(loginReal1), "origClientOrderId", "settle-link")), 200)
	if str(o, "status") != "IN_DOUBT" {
		t.Fatalf("settled %v while the trade server was unreachable", o)
	}

	if err := e.svc.App.Sim().SetFault(sim.Fault{Mode: sim.FaultNone}); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	poll(t, settleBound, 100*time.Millisecond, "the IN_DOUBT settled once the trade server is back", func() bool {
		m := obj(t, tr.get(t, "/v1/order", vals("login", itoa(loginReal1), "origClientOrderId", "settle-link")), 200)
		return str(m, "status") == "REJECTED" && num(m, "code") == -1000
	})
	eventuallyNoMismatch(t, settleBound-time.Since(back), "orders accepted again", func() string {
		res := tr.post(t, "/v1/order", p)
		if res.Status != http.StatusOK || !strings.Contains(string(res.Body), `"FILLED"`) {
			return string(res.Body)
		}
		return ""
	})
	if n := e.simPositionCount(t, loginReal1, "XRPUSD"); n != before+1 {
		t.Fatalf("%d positions opened, want the retry's alone", n-before)
	}
}
