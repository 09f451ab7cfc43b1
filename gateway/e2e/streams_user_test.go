package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"tradesvc/command"
	"tradesvc/events/dec"
	"tradesvc/infra/keys"
)

var listenKeyShape = regexp.MustCompile(`^[A-Za-z0-9]{64}$`)

func testListenKeyLifecycle(t *testing.T, e *env) {
	k := e.unlimitedKey(t)
	lk := e.listenKeys(t, k)
	res, err := e.client(noKey).Raw(context.Background(), http.MethodPost, "/v1/listenKey", "", "", false)
	wantErr(t, check(t, res, err), http.StatusUnauthorized, -1002)

	first := lk.create()
	if !listenKeyShape.MatchString(first) {
		t.Fatalf("listen key %q: want 64 letters and digits", first)
	}
	res = lk.call(http.MethodPost, nil)
	w := usedWeight(t, res)
	if m := obj(t, res, 200); str(m, "listenKey") != first || len(m) != 1 {
		t.Fatalf("POST while active: %s, want the active key %s", res.Body, first)
	}
	// Keepalive: without listenKey the active one, or the active one named; weight 1 each.
	res = lk.call(http.MethodPut, nil)
	if wantOK(t, res); string(res.Body) != "{}" || usedWeight(t, res) != w+1 {
		t.Fatalf("PUT: %s (weight %d after %d)", res.Body, usedWeight(t, res), w)
	}
	wantOK(t, lk.call(http.MethodPut, url.Values{"listenKey": {first}}))
	wantErr(t, lk.call(http.MethodPut, url.Values{"listenKey": {"not-the-active-one"}}), 400, -1125)
	wantErr(t, lk.call(http.MethodDelete, nil), 400, -1102)
	// Another key's listen key is not this key's active one.
	other := e.listenKeys(t, e.unlimitedKey(t)).create()
	wantErr(t, lk.call(http.MethodPut, url.Values{"listenKey": {other}}), 400, -1125)

	// DELETE closes the socket at once; the key is gone.
	c := e.ws(t, "/ws/"+first)
	res = lk.call(http.MethodDelete, url.Values{"listenKey": {first}})
	if wantOK(t, res); string(res.Body) != "{}" {
		t.Fatalf("DELETE: %s", res.Body)
	}
	if code, reason, _ := c.closed(10 * time.Second); code != websocket.CloseNormalClosure || reason != "listen key deleted" {
		t.Fatalf("after DELETE the stream closed %d %q", code, reason)
	}
	wantErr(t, lk.call(http.MethodPut, url.Values{"listenKey": {first}}), 400, -1125)
	wantErr(t, lk.call(http.MethodPut, nil), 400, -1125)
	wantErr(t, lk.call(http.MethodDelete, url.Values{"listenKey": {first}}), 400, -1125)
	if status, code := e.wsRefused(t, e.wsDialer("", 0), "/ws/"+first); status != 400 || code != -1125 {
		t.Fatalf("connecting with a deleted key: %d %d, want 400 -1125", status, code)
	}

	// A new key lapses after its lifetime without keepalive: listenKeyExpired, then 1000.
	second := lk.create()
	if second == first {
		t.Fatal("POST after DELETE returned the deleted key")
	}
	c = e.ws(t, "/ws/"+second)
	code, reason, frames := c.closed(testListenKeyLifetime + 15*time.Second)
	if code != websocket.CloseNormalClosure || reason != "listen key expired" || len(frames) == 0 {
		t.Fatalf("at expiry the stream closed %d %q after %d frames", code, reason, len(frames))
	}
	last := fields(t, frames[len(frames)-1])
	if str(last, "e") != "listenKeyExpired" || str(last, "listenKey") != second || wantInt(t, "E", last["E"]) <= 0 || len(last) != 3 {
		t.Fatalf("last frame %s, want listenKeyExpired with E and listenKey", frames[len(frames)-1])
	}
	wantErr(t, lk.call(http.MethodPut, url.Values{"listenKey": {second}}), 400, -1125)
	if status, code := e.wsRefused(t, e.wsDialer("", 0), "/ws/"+second); status != 400 || code != -1125 {
		t.Fatalf("connecting with an expired key: %d %d, want 400 -1125", status, code)
	}
	if third := lk.create(); third == second || !listenKeyShape.MatchString(third) {
		t.Fatalf("POST after expiry gave %q", third)
	}
}

// simBalance is the login's balance on the trade server itself.
func (e *env) simBalance(t testing.TB, login int64) string {
	t.Helper()
	accs, err := e.svc.App.Sim().Accounts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range accs {
		if a.Login == login {
			return dec.String(a.Balance)
		}
	}
	t.Fatalf("login %d not on the trade server", login)
	return ""
}

func (e *env) deposit(t testing.TB, login int64, amount string) string {
	t.Helper()
	if _, err := e.svc.App.Sim().Deposit(login, dec.MustParse(amount)); err != nil {
		t.Fatalf("deposit: %v", err)
	}
	return e.simBalance(t, login)
}

func testUserDeposit(t *testing.T, e *env) {
	c, _ := e.userStream(t, e.unlimitedKey(t))
	balance := e.deposit(t, loginReal2, "250")
	ev := c.event("ACCOUNT_UPDATE", loginReal2, func(m map[string]json.RawMessage) bool { return cmpDec(str(m, "b"), balance) == 0 })
	wantDecimal(t, "b", ev["b"], 4)
	wantDecimal(t, "cr", ev["cr"], 4)
	if x := str(ev, "x"); x != "UPDATE" && x != "NEW" {
		t.Errorf("x = %q", x)
	}
	wantInt(t, "E", ev["E"])
	absent(t, ev, "C")
}

func testUserScope(t *testing.T, e *env) {
	k := e.svc.CreateKeyWithLimits(t, keys.CreateParams{Logins: []int64{loginReal1, loginReal2},
		Limits: keys.Limits{WeightPerMinute: 1 << 30, Orders10s: 1 << 30, Orders1m: 1 << 30}})
	c, _ := e.userStream(t, k)
	b1 := e.deposit(t, loginReal1, "1")
	c.event("ACCOUNT_UPDATE", loginReal1, func(m map[string]json.RawMessage) bool { return cmpDec(str(m, "b"), b1) == 0 })

	// A witness: another key's stream that still sees 1001.
	witness, _ := e.userStream(t, e.unlimitedKey(t))

	// 1001 leaves the scope. Within about 30 s (here: the key cache and the re-check, a few
	// seconds) its events stop while 1002's keep coming: rounds deposit on both until three
	// rounds in a row brought 1002's event and none of 1001. Each round's 1001 event is in the
	// change feed (the witness has it) before 1002's deposit is made, and every stream gets
	// the feed in order: had it been delivered to c, it would come before 1002's.
	e.svc.ScopeKey(t, k.APIKey, []int64{loginReal2})
	deadline := time.Now().Add(30 * time.Second)
	clean := 0
	for round := 1; clean < 3; round++ {
		if time.Now().After(deadline) {
			t.Fatalf("events of the login removed from the scope still arrive 30 s later")
		}
		b1 := e.deposit(t, loginReal1, "0.01")
		witness.event("ACCOUNT_UPDATE", loginReal1, func(m map[string]json.RawMessage) bool { return cmpDec(str(m, "b"), b1) == 0 })
		b2 := e.deposit(t, loginReal2, "0.01")
		var leaked bool
		c.await(20*time.Second, fmt.Sprintf("round %d on %d", round, loginReal2), func(m map[string]json.RawMessage) bool {
			if num(m, "L") == loginReal1 {
				leaked = true
			}
			return str(m, "e") == "ACCOUNT_UPDATE" && num(m, "L") == loginReal2 && cmpDec(str(m, "b"), b2) == 0
		})
		if leaked {
			clean = 0
		} else {
			clean++
		}
	}
	// Nothing left in scope: the socket closes.
	e.svc.ScopeKey(t, k.APIKey, []int64{})
	code, reason, frames := c.closed(30 * time.Second)
	if code != websocket.CloseNormalClosure || reason != "no login in scope" {
		t.Fatalf("with an empty scope the stream closed %d %q", code, reason)
	}
	for _, f := range frames {
		if num(fields(t, f), "L") == loginReal1 {
			t.Errorf("an event of the removed login arrived: %s", f)
		}
	}
}

// collected is the user-stream frames of one login read so far, in arrival order.
type collected []map[string]json.RawMessage

// until reads c's frames of login into *col until one satisfies match.
func (col *collected) until(c *wsClient, login int64, what string, match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	c.t.Helper()
	return c.await(20*time.Second, what, func(m map[string]json.RawMessage) bool {
		if num(m, "L") != login {
			return false
		}
		*col = append(*col, m)
		return match(m)
	})
}

// index is the position of the first frame satisfying match, or -1.
func (col collected) index(match func(map[string]json.RawMessage) bool) int {
	for i, m := range col {
		if match(m) {
			return i
		}
	}
	return -1
}

func isEvent(kind string, kv ...string) func(map[string]json.RawMessage) bool {
	return func(m map[string]json.RawMessage) bool {
		if str(m, "e") != kind {
			return false
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if v, ok := m[kv[i]]; !ok || (str(m, kv[i]) != kv[i+1] && string(v) != kv[i+1]) {
				return false
			}
		}
		return true
	}
}

func testUserTradingEvents(t *testing.T, e *env) {
	owner, other := e.unlimitedKey(t), e.unlimitedKey(t) // two keys sharing login 1001
	tr := &trader{e: e, c: e.client(owner), key: owner}
	co, _ := e.userStream(t, owner)
	cx, _ := e.userStream(t, other)
	e.holdQuote(t, "BTCUSD", "60000.00", "60015.00")
	t.Cleanup(func() { e.releaseQuote(t, "BTCUSD") })
	const login = loginReal1
	// Orders need the execution path: wait until the gateway has seen the executor (an order
	// of an invalid type is refused after that check, before anything is recorded).
	tr.waitExecutionPath(t)

	t.Run("market fill: DEAL then POSITION_UPDATE, C only to the owning key", func(t *testing.T) {
		m := obj(t, tr.post(t, "/v1/order", market(login, "BTCUSD", "BUY", "0.01", "newOrderRespType", "RESULT",
			"newClientOrderId", "ws-mkt-1")), 200)
		pid := itoa(num(m, "positionId"))
		var got collected
		pos := got.until(co, login, "POSITION_UPDATE NEW of "+pid, isEvent("POSITION_UPDATE", "x", "NEW", "i", pid))
		// Read your events: the position the event described is there.
		if _, ok := positionsOf(t, tr, login)[num(m, "positionId")]; !ok {
			t.Errorf("GET /v1/positions right after POSITION_UPDATE lacks position %s", pid)
		}
		deal := got.index(isEvent("DEAL", "C", "ws-mkt-1"))
		if deal < 0 || deal > got.index(isEvent("POSITION_UPDATE", "i", pid)) {
			t.Fatalf("DEAL with C ws-mkt-1 did not precede POSITION_UPDATE: %v", got)
		}
		d := got[deal]
		if str(d, "S") != "BUY" || str(d, "en") != "IN" || itoa(num(d, "P")) != pid || str(d, "q") != "0.01" || str(d, "p") != "60015.00" {
			t.Errorf("DEAL %v", d)
		}
		if str(pos, "S") != "BUY" || str(pos, "q") != "0.01" || str(pos, "s") != "BTCUSD" {
			t.Errorf("POSITION_UPDATE %v", pos)
		}
		var seen collected
		od := seen.until(cx, login, "the DEAL on the other key's stream", isEvent("DEAL", "d", itoa(num(d, "d"))))
		absent(t, od, "C")
	})

	t.Run("a pending order triggers", func(t *testing.T) {
		m := obj(t, tr.post(t, "/v1/order", pending(login, "BTCUSD", "BUY_LIMIT", "0.01", "59900.00",
			"newClientOrderId", "ws-pend-1", "newOrderRespType", "RESULT")), 200)
		if str(m, "status") != "NEW" {
			t.Fatalf("placement %v", m)
		}
		var got collected
		placed := got.until(co, login, "ORDER_UPDATE NEW with C", isEvent("ORDER_UPDATE", "x", "NEW", "C", "ws-pend-1"))
		oid := itoa(num(placed, "o"))
		if str(placed, "ot") != "BUY_LIMIT" || str(placed, "X") != "NEW" || str(placed, "p") != "59900.00" {
			t.Errorf("ORDER_UPDATE NEW %v", placed)
		}
		var seen collected
		op := seen.until(cx, login, "the placement on the other key's stream", isEvent("ORDER_UPDATE", "x", "NEW", "o", oid))
		absent(t, op, "C")

		e.holdQuote(t, "BTCUSD", "59880.00", "59895.00") // the ask crosses the limit
		got = nil
		got.until(co, login, "POSITION_UPDATE NEW of the triggered order", func(m map[string]json.RawMessage) bool {
			return got.index(isEvent("ORDER_UPDATE", "o", oid, "x", "DELETE", "X", "FILLED")) >= 0 &&
				got.index(isEvent("DEAL", "o", oid)) >= 0 && isEvent("POSITION_UPDATE", "x", "NEW")(m)
		})
		// The spec's order: ORDER_UPDATE (DELETE, FILLED), DEAL, POSITION_UPDATE.
		filled := got.index(isEvent("ORDER_UPDATE", "o", oid, "x", "DELETE", "X", "FILLED"))
		deal := got.index(isEvent("DEAL", "o", oid))
		if pu := got.index(isEvent("POSITION_UPDATE", "x", "NEW")); !(filled < deal && deal < pu) {
			t.Errorf("the trigger's events came as ORDER_UPDATE %d, DEAL %d, POSITION_UPDATE %d: %v", filled, deal, pu, got)
		}
		e.holdQuote(t, "BTCUSD", "60000.00", "60015.00")
	})

	t.Run("take profit and stop loss fire", func(t *testing.T) {
		tp := tr.openPosition(t, login, "BTCUSD", "BUY", "0.01", "tp", "61000.00", "newClientOrderId", "ws-tp-1")
		e.holdQuote(t, "BTCUSD", "61010.00", "61025.00") // the bid reaches the take profit
		var got collected
		got.until(co, login, "the take profit's POSITION_UPDATE CLOSE", isEvent("POSITION_UPDATE", "x", "CLOSE", "i", itoa(tp)))
		closing := got.index(isEvent("DEAL", "P", itoa(tp), "en", "OUT"))
		if closing < 0 || closing > got.index(isEvent("POSITION_UPDATE", "x", "CLOSE")) {
			t.Fatalf("no closing DEAL before the POSITION_UPDATE CLOSE: %v", got)
		}
		absent(t, got[closing], "C") // a take profit firing is no client's order
		if str(got[closing], "S") != "SELL" {
			t.Errorf("closing deal side %s, want SELL", got[closing]["S"])
		}

		e.holdQuote(t, "BTCUSD", "60000.00", "60015.00")
		sl := tr.openPosition(t, login, "BTCUSD", "BUY", "0.01", "sl", "59000.00", "newClientOrderId", "ws-sl-1")
		e.holdQuote(t, "BTCUSD", "58990.00", "59005.00") // the bid falls to the stop loss
		got = nil
		got.until(co, login, "the stop loss's POSITION_UPDATE CLOSE", isEvent("POSITION_UPDATE", "x", "CLOSE", "i", itoa(sl)))
		closing = got.index(isEvent("DEAL", "P", itoa(sl), "en", "OUT"))
		if closing < 0 {
			t.Fatalf("no closing DEAL of the stop loss: %v", got)
		}
		absent(t, got[closing], "C")
		e.holdQuote(t, "BTCUSD", "60000.00", "60015.00")
	})
}

func testUserTradingOff(t *testing.T, e *env) {
	c, key := e.userStream(t, e.unlimitedKey(t))
	sw, err := command.NewSwitches(e.svc.PG, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if err := sw.SetTrading(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sw.SetTrading(context.Background(), true); err != nil {
			t.Errorf("switch trading back on: %v", err)
		}
	})
	code, reason, frames := c.closed(30 * time.Second)
	if code != websocket.CloseTryAgainLater || reason != "trading switched off" || len(frames) == 0 {
		t.Fatalf("the open stream closed %d %q after %d frames", code, reason, len(frames))
	}
	last := fields(t, frames[len(frames)-1])
	if num(last, "code") != -1017 || str(last, "msg") == "" {
		t.Fatalf("last frame %s, want the -1017 error frame", frames[len(frames)-1])
	}
	// A new connection is refused before the upgrade; market streams stay up.
	if status, code := e.wsRefused(t, e.wsDialer("", 0), "/ws/"+key); status != http.StatusServiceUnavailable || code != -1017 {
		t.Fatalf("user stream while trading is off: %d %d, want 503 -1017", status, code)
	}
	m := e.ws(t, "/ws/BTCUSD@tick")
	if r := m.reply(`{"method":"LIST_SUBSCRIPTIONS","id":1}`, "1"); string(r["result"]) != `["BTCUSD@tick"]` {
		t.Fatalf("market stream while trading is off: %v", r)
	}
}
