package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"tradesvc/events/trading"
	"tradesvc/infra/mt5/sim"
)

// TestTrading starts one whole service and trades through it over HTTPS: every TRADE
// endpoint and every order, position and deal read, through Kafka, the executor, the
// simulator and the projections. Subtests use distinct logins where account state matters.
func TestTrading(t *testing.T) {
	e := startEnv(t, "BTCUSD", "ETHUSD", "AVAXUSD", "UNIUSD", "XRPUSD")
	tr := e.trader(t)
	tr.waitExecutionPath(t)
	e.holdQuote(t, "BTCUSD", "60000.00", "60015.00")
	t.Run("market order with RESULT fills", func(t *testing.T) { testMarketResult(t, e, tr) })
	t.Run("market order with ACK is ACCEPTED, then FILLED", func(t *testing.T) { testMarketACK(t, e, tr) })
	t.Run("retry answers from the record, one trade", func(t *testing.T) { testRetry(t, e, tr) })
	t.Run("client order id reused for another operation or login", func(t *testing.T) { testReuse(t, e, tr) })
	t.Run("position close partial and full", func(t *testing.T) { testClose(t, e, tr) })
	t.Run("position SL/TP modify", func(t *testing.T) { testModifyPosition(t, e, tr) })
	t.Run("pending order place modify cancel", func(t *testing.T) { testPendingLifecycle(t, e, tr) })
	t.Run("pending order triggers", func(t *testing.T) { testPendingTrigger(t, e, tr) })
	t.Run("pending order expires", func(t *testing.T) { testPendingExpiry(t, e, tr) })
	t.Run("server rejection", func(t *testing.T) { testServerRejection(t, e, tr) })
	t.Run("refusals before recording", func(t *testing.T) { testRefusals(t, e, tr) })
	t.Run("batch orders", func(t *testing.T) { testBatch(t, e, tr) })
	t.Run("close all open positions", func(t *testing.T) { testCloseAll(t, e, tr) })
	t.Run("trade server faults", func(t *testing.T) { testTradeFaults(t, e, tr) })
	t.Run("known shortfalls of the trade server", func(t *testing.T) { testShortfalls(t, e, tr) })
	t.Run("1000 concurrent retries make one trade", func(t *testing.T) { testConcurrentRetries(t, e, tr) })
	t.Run("the read models rebuilt from the log equal the live ones", func(t *testing.T) { testReplayVerify(t, e) })
}

func testMarketResult(t *testing.T, e *env, tr *trader) {
	before := e.simPositionCount(t, loginReal1, "BTCUSD")
	res := tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01", "newOrderRespType", "RESULT",
		"newClientOrderId", "mkt-result-1"))
	m := obj(t, res, 200)
	if str(m, "status") != "FILLED" || str(m, "clientOrderId") != "mkt-result-1" || num(m, "login") != loginReal1 ||
		str(m, "symbol") != "BTCUSD" || str(m, "side") != "BUY" || str(m, "type") != "MARKET" {
		t.Fatalf("response %s", res.Body)
	}
	present(t, m, "orderId", "dealId", "positionId", "transactTime")
	if got := wantDecimal(t, "price", m["price"], 2); got != "60015.00" {
		t.Errorf("price %s, want the ask 60015.00", got)
	}
	if str(m, "executedVolume") != "0.01" || str(m, "volume") != "0.01" {
		t.Errorf("volumes %s", res.Body)
	}
	if num(m, "mt5RetCode") != 10009 {
		t.Errorf("mt5RetCode %s, want 10009", m["mt5RetCode"])
	}
	absent(t, m, "sl", "tp", "timeInForce", "expiration")
	if n := e.simPositionCount(t, loginReal1, "BTCUSD"); n != before+1 {
		t.Fatalf("simulator holds %d BTCUSD positions, want %d", n, before+1)
	}
	// The read models follow: the order by client order id and the position.
	o := tr.awaitOrder(t, loginReal1, "mkt-result-1", "FILLED")
	if num(o, "orderId") != num(m, "orderId") || str(o, "executedVolume") != "0.01" {
		t.Errorf("GET /v1/order %v, want orderId %d executedVolume 0.01", o, num(m, "orderId"))
	}
	pos := positionsOf(t, tr, loginReal1)
	p, ok := pos[num(m, "positionId")]
	if !ok {
		t.Fatalf("position %d not in GET /v1/positions", num(m, "positionId"))
	}
	if str(p, "side") != "BUY" || str(p, "volume") != "0.01" || str(p, "openPrice") != "60015.00" || str(p, "symbol") != "BTCUSD" {
		t.Errorf("position %v", p)
	}
	// The account's figures follow the open position: margin in use, equity and a margin level.
	eventuallyNoMismatch(t, 10*time.Second, "margin in use on the account", func() string {
		a := obj(t, tr.get(t, "/v1/account", vals("login", itoa(loginReal1))), 200)
		if cmpDec(str(a, "margin"), "0") <= 0 || cmpDec(str(a, "marginLevel"), "0") <= 0 ||
			cmpDec(str(a, "freeMargin"), str(a, "equity")) >= 0 {
			return string(mustJSON(a))
		}
		return ""
	})
}

func testMarketACK(t *testing.T, e *env, tr *trader) {
	res := tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "SELL", "0.02", "newClientOrderId", "mkt-ack-1"))
	m := obj(t, res, 200)
	if str(m, "status") != "ACCEPTED" || str(m, "clientOrderId") != "mkt-ack-1" || str(m, "volume") != "0.02" {
		t.Fatalf("ACK response %s", res.Body)
	}
	absent(t, m, "orderId", "dealId", "positionId", "price", "executedVolume", "mt5RetCode")
	o := tr.awaitOrder(t, loginReal1, "mkt-ack-1", "FILLED")
	if str(o, "executedVolume") != "0.02" || str(o, "side") != "SELL" {
		t.Errorf("order %v", o)
	}
	// Without a client order id one is generated and returned.
	m = obj(t, tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01")), 200)
	if id := str(m, "clientOrderId"); len(id) == 0 || len(id) > 36 {
		t.Errorf("generated clientOrderId %q", id)
	}
}

func testRetry(t *testing.T, e *env, tr *trader) {
	p := market(loginReal1, "BTCUSD", "BUY", "0.01", "newClientOrderId", "retry-1", "newOrderRespType", "RESULT")
	first := obj(t, tr.post(t, "/v1/order", p), 200)
	count := e.simPositionCount(t, loginReal1, "BTCUSD")
	for i := range 3 {
		again := obj(t, tr.post(t, "/v1/order", p), 200)
		if str(again, "status") != "FILLED" || num(again, "orderId") != num(first, "orderId") ||
			num(again, "dealId") != num(first, "dealId") || str(again, "price") != str(first, "price") {
			t.Fatalf("retry %d answered %v, want the stored %v", i, again, first)
		}
	}
	// An ACK retry of a filled order tells the definite outcome too.
	again := obj(t, tr.post(t, "/v1/order", with(p, "newOrderRespType", "ACK")), 200)
	if str(again, "status") != "FILLED" || num(again, "orderId") != num(first, "orderId") {
		t.Errorf("ACK retry %v", again)
	}
	// A retry answered from the record is not validated again: a now-invalid volume is ignored.
	again = obj(t, tr.post(t, "/v1/order", with(p, "volume", "0.001")), 200)
	if str(again, "status") != "FILLED" {
		t.Errorf("retry with changed content %v", again)
	}
	if n := e.simPositionCount(t, loginReal1, "BTCUSD"); n != count {
		t.Fatalf("retries traded: %d positions, want %d", n, count)
	}
}

func testReuse(t *testing.T, e *env, tr *trader) {
	obj(t, tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01", "newClientOrderId", "reuse-1")), 200)
	// the same id on another login
	res := tr.post(t, "/v1/order", market(loginReal2, "BTCUSD", "BUY", "0.01", "newClientOrderId", "reuse-1"))
	wantErr(t, res, 400, -1133)
	// the same id for another kind of operation
	res = tr.del(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", "1", "newClientOrderId", "reuse-1"))
	wantErr(t, res, 400, -1133)
}

func testClose(t *testing.T, e *env, tr *trader) {
	id := tr.openPosition(t, loginReal1, "BTCUSD", "BUY", "0.03")
	pid := itoa(id)
	wantErr(t, tr.del(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "volume", "0.05")), 400, -4024)
	wantErr(t, tr.del(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "volume", "0.015")), 400, -4007)
	wantErr(t, tr.del(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "volume", "0")), 400, -4003)
	wantErr(t, tr.del(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", "999999999")), 400, -2023)
	wantErr(t, tr.del(t, "/v1/position", vals("login", itoa(loginReal1))), 400, -1102)

	m := obj(t, tr.del(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "volume", "0.01",
		"newClientOrderId", "close-part-1", "newOrderRespType", "RESULT")), 200)
	if str(m, "status") != "FILLED" || num(m, "positionId") != id || str(m, "side") != "SELL" ||
		str(m, "executedVolume") != "0.01" || str(m, "volume") != "0.01" || num(m, "dealId") == 0 {
		t.Fatalf("partial close %v", m)
	}
	wantDecimal(t, "price", m["price"], 2)
	absent(t, m, "profit", "type")
	eventuallyNoMismatch(t, 10*time.Second, "the position at 0.02 lots", func() string {
		p, ok := positionsOf(t, tr, loginReal1)[id]
		if !ok || str(p, "volume") != "0.02" {
			return string(mustJSON(p))
		}
		return ""
	})
	// ACK close: nothing confirmed yet in the answer.
	m = obj(t, tr.del(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "newClientOrderId", "close-full-1")), 200)
	if str(m, "status") != "ACCEPTED" || num(m, "positionId") != id || str(m, "volume") != "0.02" {
		t.Fatalf("ACK close %v", m)
	}
	absent(t, m, "orderId", "dealId", "price", "executedVolume")
	tr.awaitOrder(t, loginReal1, "close-full-1", "FILLED")
	eventuallyNoMismatch(t, 10*time.Second, "the position gone", func() string {
		if _, ok := positionsOf(t, tr, loginReal1)[id]; ok {
			return "still open"
		}
		return ""
	})
	// A new close of the closed position is -5006; a retry of the close is its stored FILLED.
	wantErr(t, tr.del(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "newClientOrderId", "close-again")), 400, -5006)
	m = obj(t, tr.del(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "newClientOrderId", "close-full-1")), 200)
	if str(m, "status") != "FILLED" || str(m, "executedVolume") != "0.02" {
		t.Errorf("retry after close %v", m)
	}
	// The closing deals reach the deal history (closing deals only, by dealId).
	eventuallyNoMismatch(t, 20*time.Second, "the closing deals in userTrades", func() string {
		res := tr.get(t, "/v1/userTrades", vals("login", itoa(loginReal1), "symbol", "BTCUSD"))
		var deals []map[string]json.RawMessage
		if res.Status != 200 || json.Unmarshal(res.Body, &deals) != nil {
			return string(res.Body)
		}
		n := 0
		var last int64
		for _, d := range deals {
			if num(d, "dealId") <= last {
				return "not ordered by dealId: " + string(res.Body)
			}
			last = num(d, "dealId")
			if str(d, "entry") != "OUT" {
				return "an opening deal listed: " + string(res.Body)
			}
			if num(d, "positionId") == id {
				n++
			}
		}
		if n != 2 {
			return strconv.Itoa(n) + " closing deals of the position: " + string(res.Body)
		}
		return ""
	})
}

func testModifyPosition(t *testing.T, e *env, tr *trader) {
	id := tr.openPosition(t, loginReal1, "BTCUSD", "BUY", "0.01")
	pid := itoa(id)
	m := obj(t, tr.put(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "sl", "59000.00", "tp", "61000.00",
		"newClientOrderId", "sltp-1")), 200)
	if str(m, "status") != "FILLED" || num(m, "mt5RetCode") != 10009 || num(m, "positionId") != id ||
		str(m, "sl") != "59000.00" || str(m, "tp") != "61000.00" || str(m, "clientOrderId") != "sltp-1" {
		t.Fatalf("PUT /v1/position %v", m)
	}
	eventuallyNoMismatch(t, 10*time.Second, "the new stops on the position", func() string {
		p := positionsOf(t, tr, loginReal1)[id]
		if str(p, "sl") != "59000.00" || str(p, "tp") != "61000.00" {
			return string(mustJSON(p))
		}
		return ""
	})
	// tp=0 removes the take profit; the stop loss stays.
	m = obj(t, tr.put(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "tp", "0")), 200)
	if str(m, "status") != "FILLED" || str(m, "sl") != "59000.00" {
		t.Errorf("remove tp %v", m)
	}
	absent(t, m, "tp")
	// A retry whose change was applied answers the stored outcome, not -5005.
	m = obj(t, tr.put(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "sl", "59000.00", "tp", "61000.00",
		"newClientOrderId", "sltp-1")), 200)
	if str(m, "status") != "FILLED" {
		t.Errorf("retry %v", m)
	}
	wantErr(t, tr.put(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "sl", "60010.00")), 400, -4009)
	wantErr(t, tr.put(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid, "sl", "59000.005")), 400, -4008)
	wantErr(t, tr.put(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", pid)), 400, -1102)
	wantErr(t, tr.put(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", "999999999", "sl", "1.00")), 400, -2023)
	// A symbol without SL in its order modes refuses a stop loss.
	avax := tr.openPosition(t, loginReal1, "AVAXUSD", "BUY", "0.01")
	wantErr(t, tr.put(t, "/v1/position", vals("login", itoa(loginReal1), "positionId", itoa(avax), "sl", "1.00")), 400, -4016)
}

func testPendingLifecycle(t *testing.T, e *env, tr *trader) {
	login := itoa(loginReal2)
	m := obj(t, tr.post(t, "/v1/order", pending(loginReal2, "BTCUSD", "BUY_LIMIT", "0.01", "59000.00",
		"newClientOrderId", "pend-1")), 200)
	if str(m, "status") != "NEW" || str(m, "type") != "BUY_LIMIT" || str(m, "side") != "BUY" || str(m, "timeInForce") != "GTC" {
		t.Fatalf("ACK placement %v", m)
	}
	absent(t, m, "orderId", "price", "dealId", "positionId", "executedVolume")
	m = obj(t, tr.post(t, "/v1/order", pending(loginReal2, "BTCUSD", "SELL_LIMIT", "0.02", "61000.00",
		"newClientOrderId", "pend-2", "newOrderRespType", "RESULT", "sl", "62000.00")), 200)
	if str(m, "status") != "NEW" || num(m, "orderId") == 0 || num(m, "mt5RetCode") != 10008 || str(m, "price") != "61000.00" ||
		str(m, "sl") != "62000.00" {
		t.Fatalf("RESULT placement %v", m)
	}
	absent(t, m, "dealId", "positionId", "tp", "expiration")
	orderID := num(m, "orderId")
	first := tr.awaitOrder(t, loginReal2, "pend-1", "NEW")
	eventuallyNoMismatch(t, 10*time.Second, "both orders in openOrders", func() string {
		oo := openOrdersOf(t, tr, loginReal2)
		o, ok := oo[orderID]
		if !ok || len(oo) < 2 {
			return "missing"
		}
		if str(o, "clientOrderId") != "pend-2" || str(o, "status") != "NEW" || str(o, "type") != "SELL_LIMIT" ||
			str(o, "price") != "61000.00" || str(o, "sl") != "62000.00" || str(o, "tp") != "0" ||
			str(o, "stopLimitPrice") != "0" || str(o, "remainingVolume") != "0.02" || str(o, "timeInForce") != "GTC" {
			return string(mustJSON(o))
		}
		return ""
	})
	// Modify by orderId: new price, answered NEW with the trade server's 10009.
	m = obj(t, tr.put(t, "/v1/order", vals("login", login, "orderId", itoa(orderID), "price", "61500.00",
		"newClientOrderId", "pend-2-mod")), 200)
	if str(m, "status") != "NEW" || num(m, "mt5RetCode") != 10009 || num(m, "orderId") != orderID || str(m, "price") != "61500.00" {
		t.Fatalf("PUT /v1/order %v", m)
	}
	eventuallyNoMismatch(t, 10*time.Second, "the new price in openOrders", func() string {
		if o := openOrdersOf(t, tr, loginReal2)[orderID]; str(o, "price") != "61500.00" {
			return string(mustJSON(o))
		}
		return ""
	})
	wantErr(t, tr.put(t, "/v1/order", vals("login", login, "orderId", itoa(orderID), "price", "59000.00")), 400, -2021)
	wantErr(t, tr.put(t, "/v1/order", vals("login", login, "orderId", itoa(orderID), "stopLimitPrice", "61000.00")), 400, -1106)
	wantErr(t, tr.put(t, "/v1/order", vals("login", login, "price", "61000.00")), 400, -1102)
	wantErr(t, tr.put(t, "/v1/order", vals("login", login, "orderId", "999999999", "price", "61000.00")), 400, -2013)
	// An order of another login does not exist for this one.
	wantErr(t, tr.put(t, "/v1/order", vals("login", itoa(loginReal1), "orderId", itoa(orderID), "price", "61000.00")), 400, -2013)
	// Cancel by origClientOrderId: CANCELED; the order leaves openOrders and shows in allOrders.
	m = obj(t, tr.del(t, "/v1/order", vals("login", login, "origClientOrderId", "pend-2", "newClientOrderId", "pend-2-cxl")), 200)
	if str(m, "status") != "CANCELED" || num(m, "orderId") != orderID || str(m, "side") != "SELL" ||
		str(m, "clientOrderId") != "pend-2-cxl" || num(m, "mt5RetCode") != 10009 {
		t.Fatalf("DELETE /v1/order %v", m)
	}
	tr.awaitOrder(t, loginReal2, "pend-2", "CANCELED")
	eventuallyNoMismatch(t, 10*time.Second, "the order out of openOrders", func() string {
		if _, ok := openOrdersOf(t, tr, loginReal2)[orderID]; ok {
			return "still open"
		}
		return ""
	})
	var all []map[string]json.RawMessage
	decode(t, tr.get(t, "/v1/allOrders", vals("login", login)), &all)
	found := false
	for _, o := range all {
		if num(o, "orderId") == orderID {
			found = str(o, "status") == "CANCELED"
		}
	}
	if !found {
		t.Errorf("allOrders has no CANCELED order %d: %v", orderID, all)
	}
	m = obj(t, tr.get(t, "/v1/order", vals("login", login, "orderId", itoa(orderID))), 200)
	if str(m, "status") != "CANCELED" || str(m, "clientOrderId") != "pend-2" {
		t.Errorf("GET /v1/order by orderId %v", m)
	}
	// Cancelling again: the order is no longer pending.
	wantErr(t, tr.del(t, "/v1/order", vals("login", login, "orderId", itoa(orderID))), 400, -2013)
	// The first order, queried by its client order id, carries its orderId once placed.
	if num(first, "orderId") == 0 {
		t.Errorf("GET /v1/order of pend-1 without orderId: %v", first)
	}
	obj(t, tr.del(t, "/v1/order", vals("login", login, "orderId", itoa(num(first, "orderId")))), 200)
}

func testPendingTrigger(t *testing.T, e *env, tr *trader) {
	m := obj(t, tr.post(t, "/v1/order", pending(loginReal2, "BTCUSD", "BUY_LIMIT", "0.01", "59900.00",
		"newClientOrderId", "trig-1", "newOrderRespType", "RESULT")), 200)
	if str(m, "status") != "NEW" {
		t.Fatalf("placement %v", m)
	}
	e.holdQuote(t, "BTCUSD", "59880.00", "59895.00") // the ask crosses the limit
	tr.awaitOrder(t, loginReal2, "trig-1", "FILLED")
	eventuallyNoMismatch(t, 10*time.Second, "the trigger's deal on the order", func() string {
		o := obj(t, tr.get(t, "/v1/order", vals("login", itoa(loginReal2), "origClientOrderId", "trig-1")), 200)
		if str(o, "executedVolume") != "0.01" || num(o, "positionId") == 0 {
			return string(mustJSON(o))
		}
		absent(t, o, "code", "msg")
		return ""
	})
	e.holdQuote(t, "BTCUSD", "60000.00", "60015.00")
}

func testPendingExpiry(t *testing.T, e *env, tr *trader) {
	exp := time.Now().Add(2 * time.Second).UnixMilli()
	m := obj(t, tr.post(t, "/v1/order", pending(loginReal2, "BTCUSD", "BUY_LIMIT", "0.01", "58000.00",
		"timeInForce", "GTD", "expiration", itoa(exp), "newClientOrderId", "exp-1", "newOrderRespType", "RESULT")), 200)
	if str(m, "status") != "NEW" || str(m, "timeInForce") != "GTD" || num(m, "expiration") != exp {
		t.Fatalf("GTD placement %v", m)
	}
	tr.awaitOrder(t, loginReal2, "exp-1", "EXPIRED")
	// GTD on a symbol whose expiration modes lack it, and GTD without an expiration.
	wantErr(t, tr.post(t, "/v1/order", pending(loginReal2, "UNIUSD", "BUY_LIMIT", "0.01", "1.000",
		"timeInForce", "GTD", "expiration", itoa(exp+60000))), 400, -4012)
	wantErr(t, tr.post(t, "/v1/order", pending(loginReal2, "BTCUSD", "BUY_LIMIT", "0.01", "58000.00",
		"timeInForce", "GTD")), 400, -1102)
}

func testServerRejection(t *testing.T, e *env, tr *trader) {
	// USDRUB has no session on any day: the trade server refuses with 10018.
	res := tr.post(t, "/v1/order", market(loginReal1, "USDRUB", "BUY", "0.01", "newClientOrderId", "closed-1", "newOrderRespType", "RESULT"))
	wantOpErr(t, res, 400, -4010, "REJECTED", "closed-1", loginReal1, 10018)
	o := tr.awaitOrder(t, loginReal1, "closed-1", "REJECTED")
	if num(o, "code") != -4010 || num(o, "mt5RetCode") != 10018 {
		t.Errorf("GET /v1/order of a rejected order %v", o)
	}
	// A retry is the stored rejection.
	res = tr.post(t, "/v1/order", market(loginReal1, "USDRUB", "BUY", "0.01", "newClientOrderId", "closed-1"))
	wantOpErr(t, res, 400, -4010, "REJECTED", "closed-1", loginReal1, 10018)
	// Account without trading: -2024 before anything is recorded.
	wantErr(t, tr.post(t, "/v1/order", market(loginNoTrade, "BTCUSD", "BUY", "0.01")), 400, -2024)
}

func testRefusals(t *testing.T, e *env, tr *trader) {
	l := int64(loginReal1)
	cases := []struct {
		name string
		p    map[string]string
		code int
	}{
		{"invalid type", map[string]string{"type": "LIMIT"}, -1116},
		{"invalid side", map[string]string{"side": "LONG"}, -1117},
		{"malformed volume", map[string]string{"volume": "0,01"}, -1130},
		{"volume below min", map[string]string{"volume": "0.001"}, -4006},
		{"volume above max", map[string]string{"volume": "100000"}, -4005},
		{"volume off step", map[string]string{"volume": "0.015"}, -4007},
		{"zero volume", map[string]string{"volume": "0"}, -4003},
		{"unknown symbol", map[string]string{"symbol": "NOPEUSD"}, -1121},
		{"symbol in another case", map[string]string{"symbol": "btcusd"}, -1121},
		{"disabled symbol", map[string]string{"symbol": "SOLUSD"}, -4011},
		{"long only", map[string]string{"symbol": "ADAUSD", "side": "SELL"}, -4013},
		{"short only", map[string]string{"symbol": "DOGEUSD"}, -4014},
		{"close only", map[string]string{"symbol": "DOTUSD"}, -4015},
		{"sl not allowed", map[string]string{"symbol": "AVAXUSD", "sl": "1.00"}, -4016},
		{"sl too close", map[string]string{"sl": "59999.50"}, -4009},
		{"sl off tick", map[string]string{"sl": "59000.001"}, -4008},
		{"negative tp", map[string]string{"tp": "-1"}, -4001},
		{"timeInForce on market", map[string]string{"timeInForce": "GTC"}, -1106},
		{"unknown newOrderRespType", map[string]string{"newOrderRespType": "FULL"}, -1130},
		{"comment too long", map[string]string{"comment": "1234567890123456789012345"}, -1130},
		{"empty client order id", map[string]string{"newClientOrderId": ""}, -1118},
		{"client order id too long", map[string]string{"newClientOrderId": "0123456789012345678901234567890123456"}, -1119},
		{"client order id illegal", map[string]string{"newClientOrderId": "a b"}, -1119},
		{"missing login", map[string]string{"login": ""}, -1102},
		{"invalid login", map[string]string{"login": "abc"}, -1122},
		{"login out of scope", map[string]string{"login": "9999"}, -2022},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := market(l, "BTCUSD", "BUY", "0.01")
			for k, v := range c.p {
				if v == "" && k == "login" {
					p.Del(k)
					continue
				}
				p.Set(k, v)
			}
			wantErr(t, tr.post(t, "/v1/order", p), 400, c.code)
		})
	}
	pend := []struct {
		name string
		p    map[string]string
		code int
	}{
		{"buy limit above the ask", map[string]string{"price": "60100.00"}, -2021},
		{"buy stop below the ask", map[string]string{"type": "BUY_STOP", "price": "59000.00"}, -2021},
		{"sell limit below the bid", map[string]string{"type": "SELL_LIMIT", "price": "59000.00"}, -2021},
		{"sell stop above the bid", map[string]string{"type": "SELL_STOP", "price": "61000.00"}, -2021},
		{"price too close", map[string]string{"price": "60014.50"}, -4009},
		{"price off tick", map[string]string{"price": "59000.005"}, -4008},
		{"zero price", map[string]string{"price": "0"}, -4001},
		{"missing price", map[string]string{"price": ""}, -1102},
		{"stray stopLimitPrice", map[string]string{"stopLimitPrice": "58000.00"}, -1106},
		{"stop limit without stopLimitPrice", map[string]string{"type": "BUY_STOP_LIMIT", "price": "61000.00"}, -1102},
		{"side against type", map[string]string{"side": "SELL"}, -1117},
		{"invalid timeInForce", map[string]string{"timeInForce": "IOC"}, -1115},
		{"expiration not positive", map[string]string{"timeInForce": "GTD", "expiration": "0"}, -4012},
		{"malformed expiration", map[string]string{"timeInForce": "GTD", "expiration": "soon"}, -1130},
	}
	for _, c := range pend {
		t.Run("pending "+c.name, func(t *testing.T) {
			p := pending(l, "BTCUSD", "BUY_LIMIT", "0.01", "59000.00")
			for k, v := range c.p {
				if v == "" {
					p.Del(k)
					continue
				}
				p.Set(k, v)
			}
			wantErr(t, tr.post(t, "/v1/order", p), 400, c.code)
		})
	}
}

func testBatch(t *testing.T, e *env, tr *trader) {
	items := `[{"login":1003,"symbol":"BTCUSD","type":"MARKET","side":"BUY","volume":"0.01","newClientOrderId":"b-1"},` +
		`{"login":"1003","symbol":"BTCUSD","type":"BUY_LIMIT","volume":"0.01","price":"58000.00","newClientOrderId":"b-2"},` +
		`{"login":1003,"symbol":"NOPE","type":"MARKET","side":"BUY","volume":"0.01","newClientOrderId":"b-3"},` +
		`{"login":9999,"symbol":"BTCUSD","type":"MARKET","side":"BUY","volume":"0.01","newClientOrderId":"b-4"},` +
		`{"login":1002,"symbol":"BTCUSD","type":"MARKET","side":"SELL","volume":"0.01","newClientOrderId":"b-5"}]`
	res := tr.post(t, "/v1/batchOrders", vals("batchOrders", items, "newOrderRespType", "RESULT"))
	if res.Status != 200 {
		t.Fatalf("batch %d %s", res.Status, res.Body)
	}
	var slots []map[string]json.RawMessage
	decode(t, res, &slots)
	if len(slots) != 5 {
		t.Fatalf("%d slots: %s", len(slots), res.Body)
	}
	if str(slots[0], "status") != "FILLED" || str(slots[0], "clientOrderId") != "b-1" || num(slots[0], "login") != 1003 {
		t.Errorf("slot 0 %v", slots[0])
	}
	if str(slots[1], "status") != "NEW" || num(slots[1], "orderId") == 0 {
		t.Errorf("slot 1 %v", slots[1])
	}
	if num(slots[2], "code") != -1121 || str(slots[2], "clientOrderId") != "b-3" || num(slots[2], "login") != 1003 {
		t.Errorf("slot 2 %v", slots[2])
	}
	if num(slots[3], "code") != -2022 || num(slots[3], "login") != 9999 {
		t.Errorf("slot 3 %v", slots[3])
	}
	if str(slots[4], "status") != "FILLED" || num(slots[4], "login") != 1002 {
		t.Errorf("slot 4 %v", slots[4])
	}
	// The same batch again: every recorded item answers from its record, nothing trades twice.
	before := e.simPositionCount(t, loginDemo, "BTCUSD")
	decode(t, tr.post(t, "/v1/batchOrders", vals("batchOrders", items)), &slots)
	if str(slots[0], "status") != "FILLED" || num(slots[2], "code") != -1121 {
		t.Errorf("replayed batch %v", slots)
	}
	if n := e.simPositionCount(t, loginDemo, "BTCUSD"); n != before {
		t.Errorf("replayed batch traded: %d positions, want %d", n, before)
	}
	wantErr(t, tr.post(t, "/v1/batchOrders", vals("batchOrders", `[]`)), 400, -1131)
	wantErr(t, tr.post(t, "/v1/batchOrders", vals("batchOrders", `{"login":1003}`)), 400, -1130)
	wantErr(t, tr.post(t, "/v1/batchOrders", vals("batchOrders",
		`[{"login":1003,"newClientOrderId":"d"},{"login":1003,"newClientOrderId":"d"}]`)), 400, -1132)
	wantErr(t, tr.post(t, "/v1/batchOrders", vals()), 400, -1102)
}

func testCloseAll(t *testing.T, e *env, tr *trader) {
	l := int64(loginCent)
	a := tr.openPosition(t, l, "BTCUSD", "BUY", "0.01")
	b := tr.openPosition(t, l, "ETHUSD", "SELL", "0.02")
	eventuallyNoMismatch(t, 10*time.Second, "both positions projected", func() string {
		ps := positionsOf(t, tr, l)
		if _, ok := ps[a]; !ok {
			return "a missing"
		}
		if _, ok := ps[b]; !ok {
			return "b missing"
		}
		return ""
	})
	m := obj(t, tr.del(t, "/v1/allOpenPositions", vals("login", itoa(l), "newClientOrderId", "sweep-1")), 200)
	if num(m, "requested") != 2 || str(m, "clientOrderId") != "sweep-1" {
		t.Fatalf("sweep %v", m)
	}
	// Each leg asks to close its position's whole volume, in the first answer and in replays.
	wantVolume := map[int64]string{a: "0.01", b: "0.02"}
	checkLegVolumes := func(m map[string]json.RawMessage) {
		t.Helper()
		var legs []map[string]json.RawMessage
		if err := json.Unmarshal(m["legs"], &legs); err != nil {
			t.Fatalf("legs of %v: %v", m, err)
		}
		for _, leg := range legs {
			if got, want := str(leg, "volume"), wantVolume[num(leg, "positionId")]; got != want {
				t.Errorf("leg %v: volume %q, want %q", leg, got, want)
			}
		}
	}
	checkLegVolumes(m)
	eventuallyNoMismatch(t, 15*time.Second, "no open position", func() string {
		if ps := positionsOf(t, tr, l); len(ps) != 0 {
			return strconv.Itoa(len(ps)) + " open"
		}
		return ""
	})
	// Reusing the id replays the snapshot with each leg's outcome and closes nothing new.
	c := tr.openPosition(t, l, "BTCUSD", "BUY", "0.01")
	m = obj(t, tr.del(t, "/v1/allOpenPositions", vals("login", itoa(l), "newClientOrderId", "sweep-1")), 200)
	var legs []map[string]json.RawMessage
	_ = json.Unmarshal(m["legs"], &legs)
	if num(m, "requested") != 2 || len(legs) != 2 {
		t.Fatalf("replayed sweep %v", m)
	}
	for _, leg := range legs {
		if str(leg, "status") != "FILLED" || (num(leg, "positionId") != a && num(leg, "positionId") != b) {
			t.Errorf("replayed leg %v", leg)
		}
	}
	checkLegVolumes(m)
	time.Sleep(500 * time.Millisecond)
	if _, ok := positionsOf(t, tr, l)[c]; !ok {
		t.Fatalf("the replayed sweep closed position %d opened after it", c)
	}
	// A fresh id sweeps what is open now; a sweep that found nothing stays empty on reuse.
	m = obj(t, tr.del(t, "/v1/allOpenPositions", vals("login", itoa(l), "newClientOrderId", "sweep-2")), 200)
	if num(m, "requested") != 1 {
		t.Fatalf("second sweep %v", m)
	}
	eventuallyNoMismatch(t, 15*time.Second, "no open position", func() string {
		if ps := positionsOf(t, tr, l); len(ps) != 0 {
			return strconv.Itoa(len(ps)) + " open"
		}
		return ""
	})
	m = obj(t, tr.del(t, "/v1/allOpenPositions", vals("login", itoa(l), "newClientOrderId", "sweep-empty")), 200)
	if num(m, "requested") != 0 {
		t.Fatalf("empty sweep %v", m)
	}
	tr.openPosition(t, l, "BTCUSD", "BUY", "0.01")
	m = obj(t, tr.del(t, "/v1/allOpenPositions", vals("login", itoa(l), "newClientOrderId", "sweep-empty")), 200)
	if num(m, "requested") != 0 {
		t.Errorf("reused empty sweep %v", m)
	}
}

func testTradeFaults(t *testing.T, e *env, tr *trader) {
	t.Run("no in-band answer is reconciled by tag", func(t *testing.T) {
		e.setFault(t, sim.Fault{Mode: sim.FaultNoAnswer})
		m := obj(t, tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01", "newOrderRespType", "RESULT")), 200)
		if str(m, "status") != "FILLED" || num(m, "orderId") == 0 || str(m, "executedVolume") != "0.01" {
			t.Errorf("no-answer fill %v", m)
		}
		absent(t, m, "mt5RetCode")
	})
	t.Run("timeout is in doubt", func(t *testing.T) {
		e.setFault(t, sim.Fault{Mode: sim.FaultTimeout})
		res := tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01", "newClientOrderId", "to-1", "newOrderRespType", "RESULT"))
		wantOpErr(t, res, 504, -5008, "IN_DOUBT", "to-1", loginReal1, 0)
	})
	t.Run("requote", func(t *testing.T) {
		e.setFault(t, sim.Fault{Mode: sim.FaultRequote})
		res := tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01", "newClientOrderId", "rq-1", "newOrderRespType", "RESULT"))
		wantOpErr(t, res, 400, -5001, "REJECTED", "rq-1", loginReal1, 10004)
	})
	t.Run("no money", func(t *testing.T) {
		e.setFault(t, sim.Fault{Mode: sim.FaultRefuse, Retcode: trading.RetNoMoney})
		res := tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01", "newClientOrderId", "nm-1", "newOrderRespType", "RESULT"))
		wantOpErr(t, res, 400, -2018, "REJECTED", "nm-1", loginReal1, 10019)
	})
}

func testShortfalls(t *testing.T, e *env, tr *trader) {
	e.setFault(t, sim.Fault{Mode: sim.FaultShortfalls})
	login := itoa(loginReal2)
	// Market orders still settle to FILLED: a deal is recorded.
	m := obj(t, tr.post(t, "/v1/order", market(loginReal2, "BTCUSD", "BUY", "0.01", "newOrderRespType", "RESULT")), 200)
	if str(m, "status") != "FILLED" {
		t.Errorf("shortfalls market %v", m)
	}
	absent(t, m, "mt5RetCode")
	// A pending placement keeps its queued status after the 5-second wait, without retcode.
	start := time.Now()
	m = obj(t, tr.post(t, "/v1/order", pending(loginReal2, "BTCUSD", "BUY_LIMIT", "0.01", "57000.00",
		"newClientOrderId", "sf-1", "newOrderRespType", "RESULT")), 200)
	if str(m, "status") != "NEW" || time.Since(start) < 4*time.Second {
		t.Errorf("shortfalls placement %v after %v", m, time.Since(start))
	}
	absent(t, m, "mt5RetCode", "orderId")
	// origClientOrderId does not resolve the pending order; the query returns the queued status.
	wantErr(t, tr.put(t, "/v1/order", vals("login", login, "origClientOrderId", "sf-1", "price", "57100.00")), 400, -2013)
	wantErr(t, tr.del(t, "/v1/order", vals("login", login, "origClientOrderId", "sf-1")), 400, -2013)
	o := obj(t, tr.get(t, "/v1/order", vals("login", login, "origClientOrderId", "sf-1")), 200)
	if str(o, "status") != "NEW" {
		t.Errorf("queried %v", o)
	}
	// The order rests all the same: openOrders has it, and a cancel by orderId stays ACCEPTED
	// and is not applied.
	var id int64
	eventuallyNoMismatch(t, 10*time.Second, "the order in openOrders", func() string {
		for oid, oo := range openOrdersOf(t, tr, loginReal2) {
			if str(oo, "price") == "57000.00" {
				id = oid
				return ""
			}
		}
		return "absent"
	})
	m = obj(t, tr.del(t, "/v1/order", vals("login", login, "orderId", itoa(id))), 200)
	if str(m, "status") != "ACCEPTED" {
		t.Errorf("shortfalls cancel %v", m)
	}
	absent(t, m, "mt5RetCode")
	if _, ok := openOrdersOf(t, tr, loginReal2)[id]; !ok {
		t.Errorf("the cancel was applied under shortfalls")
	}
}

func testConcurrentRetries(t *testing.T, e *env, tr *trader) {
	before := e.simPositionCount(t, loginReal1, "XRPUSD")
	p := market(loginReal1, "XRPUSD", "BUY", "0.01", "newClientOrderId", "storm-1")
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[string]int{}
	sem := make(chan struct{}, 32)
	for range 1000 {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res := tr.post(t, "/v1/order", p)
			var m map[string]json.RawMessage
			_ = json.Unmarshal(res.Body, &m)
			mu.Lock()
			defer mu.Unlock()
			if res.Status != 200 || str(m, "clientOrderId") != "storm-1" {
				statuses["bad "+strconv.Itoa(res.Status)+" "+string(res.Body)]++
				return
			}
			statuses[str(m, "status")]++
		}()
	}
	wg.Wait()
	for s, n := range statuses {
		if s != "ACCEPTED" && s != "FILLED" {
			t.Errorf("%d answers %s", n, s)
		}
	}
	tr.awaitOrder(t, loginReal1, "storm-1", "FILLED")
	time.Sleep(time.Second)
	if n := e.simPositionCount(t, loginReal1, "XRPUSD"); n != before+1 {
		t.Fatalf("1000 retries made %d trades, want 1", n-before)
	}
	// The requests that lost the race for the id appended their commands beside the insert
	// that found it taken: orphans, which the executor voids. No read model shows one.
	res := tr.get(t, "/v1/allOrders", vals("login", itoa(loginReal1), "symbol", "XRPUSD"))
	var orders []map[string]json.RawMessage
	if err := json.Unmarshal(res.Body, &orders); err != nil || res.Status != 200 {
		t.Fatalf("allOrders: %d %s (%v)", res.Status, res.Body, err)
	}
	n := 0
	for _, o := range orders {
		if str(o, "clientOrderId") == "storm-1" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("allOrders lists %d orders of storm-1, want 1", n)
	}
	ch := e.svc.ClickHouse(t)
	eventuallyNoMismatch(t, 30*time.Second, "one execution_quality row of storm-1", func() string {
		rows := chRows(t, ch, `SELECT count() AS n, toString(sum(decided)) AS decided FROM execution_quality FINAL
			WHERE client_order_id = 'storm-1'`)
		if rows[0]["n"] != "1" || rows[0]["decided"] != "1" {
			return fmt.Sprintf("%s rows, %s decided", rows[0]["n"], rows[0]["decided"])
		}
		return ""
	})
}

// positionsOf returns GET /v1/positions of login by positionId.
func positionsOf(t testing.TB, tr *trader, login int64) map[int64]map[string]json.RawMessage {
	t.Helper()
	res := tr.get(t, "/v1/positions", vals("login", itoa(login)))
	if res.Status != http.StatusOK {
		t.Fatalf("GET /v1/positions %d %s", res.Status, res.Body)
	}
	var list []map[string]json.RawMessage
	decode(t, res, &list)
	out := map[int64]map[string]json.RawMessage{}
	for _, p := range list {
		out[num(p, "positionId")] = p
	}
	return out
}

// openOrdersOf returns GET /v1/openOrders of login by orderId.
func openOrdersOf(t testing.TB, tr *trader, login int64) map[int64]map[string]json.RawMessage {
	t.Helper()
	res := tr.get(t, "/v1/openOrders", vals("login", itoa(login)))
	if res.Status != http.StatusOK {
		t.Fatalf("GET /v1/openOrders %d %s", res.Status, res.Body)
	}
	var list []map[string]json.RawMessage
	decode(t, res, &list)
	out := map[int64]map[string]json.RawMessage{}
	for _, o := range list {
		out[num(o, "orderId")] = o
	}
	return out
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
