package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/mt5"
	"tradesvc/infra/mt5/sim"
)

// trader sends signed TRADE and USER_DATA requests with one key: POST and PUT carry their
// parameters in a form body, GET and DELETE in the query string (the spec's rule).
type trader struct {
	e   *env
	c   *gwclient.Client
	key apptest.Key
}

// trader returns a trader over a key scoped to the seed logins with budgets no test exhausts.
func (e *env) trader(t testing.TB) *trader {
	t.Helper()
	k := e.unlimitedKey(t)
	return &trader{e: e, c: e.client(k), key: k}
}

func (tr *trader) send(t testing.TB, method, path string, params url.Values) *gwclient.Response {
	t.Helper()
	pl := gwclient.InQuery
	if method == http.MethodPost || method == http.MethodPut {
		pl = gwclient.InBody
	}
	res, err := tr.c.Signed(context.Background(), method, path, params, pl)
	return check(t, res, err)
}

func (tr *trader) post(t testing.TB, path string, params url.Values) *gwclient.Response {
	t.Helper()
	return tr.send(t, http.MethodPost, path, params)
}

func (tr *trader) put(t testing.TB, path string, params url.Values) *gwclient.Response {
	t.Helper()
	return tr.send(t, http.MethodPut, path, params)
}

func (tr *trader) del(t testing.TB, path string, params url.Values) *gwclient.Response {
	t.Helper()
	return tr.send(t, http.MethodDelete, path, params)
}

func (tr *trader) get(t testing.TB, path string, params url.Values) *gwclient.Response {
	t.Helper()
	return tr.send(t, http.MethodGet, path, params)
}

// vals builds parameters from name, value pairs.
func vals(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// with returns a copy of v with more name, value pairs.
func with(v url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// market is the parameters of a MARKET order.
func market(login int64, symbol, side, volume string, kv ...string) url.Values {
	return with(vals("login", itoa(login), "symbol", symbol, "type", "MARKET", "side", side, "volume", volume), kv...)
}

// pending is the parameters of a pending order.
func pending(login int64, symbol, typ, volume, price string, kv ...string) url.Values {
	return with(vals("login", itoa(login), "symbol", symbol, "type", typ, "volume", volume, "price", price), kv...)
}

// obj decodes a JSON object response into a map of raw fields after checking its status.
func obj(t testing.TB, res *gwclient.Response, status int) map[string]json.RawMessage {
	t.Helper()
	if res.Status != status {
		t.Fatalf("status %d, want %d: %s", res.Status, status, res.Body)
	}
	return fields(t, res.Body)
}

// str returns a JSON string field ("" when absent).
func str(m map[string]json.RawMessage, k string) string {
	var s string
	_ = json.Unmarshal(m[k], &s)
	return s
}

// num returns a JSON integer field (0 when absent).
func num(m map[string]json.RawMessage, k string) int64 {
	var n int64
	_ = json.Unmarshal(m[k], &n)
	return n
}

// absent fails if any of the named fields is present.
func absent(t testing.TB, m map[string]json.RawMessage, names ...string) {
	t.Helper()
	for _, n := range names {
		if v, ok := m[n]; ok {
			t.Errorf("field %q present (%s), want it omitted", n, v)
		}
	}
}

// present fails unless every named field is present.
func present(t testing.TB, m map[string]json.RawMessage, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := m[n]; !ok {
			t.Errorf("field %q missing in %v", n, keysOf(m))
		}
	}
}

func keysOf(m map[string]json.RawMessage) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(ks, ",")
}

// wantOpErr fails unless res is the error envelope of a recorded operation: status, code,
// status field, clientOrderId and login (and mt5RetCode when retcode > 0).
func wantOpErr(t testing.TB, res *gwclient.Response, httpStatus, code int, status, coid string, login int64, retcode int) {
	t.Helper()
	m := obj(t, res, httpStatus)
	if num(m, "code") != int64(code) || str(m, "status") != status || str(m, "clientOrderId") != coid || num(m, "login") != login {
		t.Errorf("error body %s: want code %d status %s clientOrderId %s login %d", res.Body, code, status, coid, login)
	}
	if str(m, "msg") == "" {
		t.Errorf("error body without msg: %s", res.Body)
	}
	if retcode > 0 && num(m, "mt5RetCode") != int64(retcode) {
		t.Errorf("mt5RetCode %s, want %d", m["mt5RetCode"], retcode)
	}
	if retcode == 0 {
		absent(t, m, "mt5RetCode")
	}
}

// holdQuote sets and holds a symbol's quote on the simulator and waits until the gateway's
// market projection shows it.
func (e *env) holdQuote(t testing.TB, symbol, bid, ask string) {
	t.Helper()
	if err := e.svc.App.Sim().SetQuote(symbol, dec.MustParse(bid), dec.MustParse(ask)); err != nil {
		t.Fatalf("hold quote %s: %v", symbol, err)
	}
	c := e.client(e.main)
	eventuallyNoMismatch(t, 10*time.Second, "quote "+symbol+" "+bid+"/"+ask, func() string {
		res, err := c.Keyed(context.Background(), http.MethodGet, "/v1/ticker/price", url.Values{"symbol": {symbol}})
		if err != nil || res.Status != http.StatusOK {
			return "no quote"
		}
		m := fields(t, res.Body)
		if cmpDec(str(m, "bid"), bid) != 0 || cmpDec(str(m, "ask"), ask) != 0 {
			return string(res.Body)
		}
		return ""
	})
}

// releaseQuote gives a held symbol back to the simulator's generator.
func (e *env) releaseQuote(t testing.TB, symbol string) {
	t.Helper()
	if err := e.svc.App.Sim().ResumeFeed(symbol); err != nil {
		t.Fatalf("resume feed %s: %v", symbol, err)
	}
}

// setFault sets the simulator's fault injection until the test ends.
func (e *env) setFault(t testing.TB, f sim.Fault) {
	t.Helper()
	if err := e.svc.App.Sim().SetFault(f); err != nil {
		t.Fatalf("set fault: %v", err)
	}
	t.Cleanup(func() { _ = e.svc.App.Sim().SetFault(sim.Fault{Mode: sim.FaultNone}) })
}

// simPositions returns the login's open positions on the trade server itself.
func (e *env) simPositions(t testing.TB, login int64) []mt5.Position {
	t.Helper()
	ps, err := e.svc.App.Sim().Positions(context.Background(), login)
	if err != nil {
		t.Fatalf("simulator positions: %v", err)
	}
	return ps
}

// simPositionCount counts the login's open positions of symbol on the trade server itself:
// how tests prove that an order traded once and only once.
func (e *env) simPositionCount(t testing.TB, login int64, symbol string) int {
	t.Helper()
	n := 0
	for _, p := range e.simPositions(t, login) {
		if p.Symbol == symbol {
			n++
		}
	}
	return n
}

// awaitOrder polls GET /v1/order by origClientOrderId until its status is want.
func (tr *trader) awaitOrder(t testing.TB, login int64, coid, want string) map[string]json.RawMessage {
	t.Helper()
	var last map[string]json.RawMessage
	eventuallyNoMismatch(t, 15*time.Second, "order "+coid+" "+want, func() string {
		res := tr.get(t, "/v1/order", vals("login", itoa(login), "origClientOrderId", coid))
		if res.Status != http.StatusOK {
			return string(res.Body)
		}
		last = fields(t, res.Body)
		if str(last, "status") != want {
			return string(res.Body)
		}
		return ""
	})
	return last
}

// openPosition places a MARKET order with RESULT and returns its positionId.
func (tr *trader) openPosition(t testing.TB, login int64, symbol, side, volume string, kv ...string) int64 {
	t.Helper()
	m := obj(t, tr.post(t, "/v1/order", market(login, symbol, side, volume, append(kv, "newOrderRespType", "RESULT")...)), 200)
	if str(m, "status") != "FILLED" || num(m, "positionId") == 0 {
		t.Fatalf("open %s %s %s: %v", symbol, side, volume, m)
	}
	return num(m, "positionId")
}

// waitExecutionPath waits until the gateway has seen the executor's heartbeat: before it,
// TRADE endpoints answer -5015. An order of an invalid type is refused after that check and
// before anything is recorded, so probing with one trades nothing.
func (tr *trader) waitExecutionPath(t testing.TB) {
	t.Helper()
	poll(t, 30*time.Second, 100*time.Millisecond, "the execution path", func() bool {
		res := tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01", "type", "NOPE"))
		return num(fields(t, res.Body), "code") != -5015
	})
}
