package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// testUserSweep (issue 17, item 7): the legs of DELETE /v1/allOpenPositions share the sweep's
// client order id. Each leg's closing DEAL carries it in C (the field a bot routes on); GET
// /v1/order by that id is the defined answer, -2013 naming the sweep, every time (never the
// sweep's row once and a leg the next); each leg answers by the orderId its status carries.
func testUserSweep(t *testing.T, e *env) {
	k := e.unlimitedKey(t)
	tr := &trader{e: e, c: e.client(k), key: k}
	c, _ := e.userStream(t, k)
	tr.waitExecutionPath(t)
	const login, sweepID = loginDemo, "ws-sweep-1"
	a := tr.openPosition(t, login, "BTCUSD", "BUY", "0.01")
	b := tr.openPosition(t, login, "ETHUSD", "SELL", "0.02")
	eventuallyNoMismatch(t, 10*time.Second, "both positions projected", func() string {
		if ps := positionsOf(t, tr, login); len(ps) != 2 {
			return itoa(int64(len(ps))) + " open"
		}
		return ""
	})
	m := obj(t, tr.del(t, "/v1/allOpenPositions", vals("login", itoa(login), "newClientOrderId", sweepID)), 200)
	if num(m, "requested") != 2 || str(m, "clientOrderId") != sweepID {
		t.Fatalf("sweep %v", m)
	}

	var got collected
	got.until(c, login, "both legs' POSITION_UPDATE CLOSE", func(map[string]json.RawMessage) bool {
		return got.index(isEvent("POSITION_UPDATE", "x", "CLOSE", "i", itoa(a))) >= 0 &&
			got.index(isEvent("POSITION_UPDATE", "x", "CLOSE", "i", itoa(b))) >= 0
	})
	for _, p := range []int64{a, b} {
		i := got.index(isEvent("DEAL", "P", itoa(p), "en", "OUT"))
		if i < 0 {
			t.Fatalf("no closing DEAL of position %d: %v", p, got)
		}
		if str(got[i], "C") != sweepID {
			t.Errorf("closing DEAL of leg %d carries C %s, want the sweep's id %s", p, got[i]["C"], sweepID)
		}
	}

	// By the sweep's id: the same defined answer every time.
	for i := 0; i < 20; i++ {
		res := tr.get(t, "/v1/order", vals("login", itoa(login), "origClientOrderId", sweepID))
		wantErr(t, res, http.StatusBadRequest, -2013)
		if msg := str(fields(t, res.Body), "msg"); !strings.Contains(msg, "close-all sweep") || !strings.Contains(msg, sweepID) {
			t.Fatalf("lookup %d by the sweep's id: %s, want -2013 naming the sweep", i, res.Body)
		}
	}

	// The legs: their statuses (a replay of the sweep: the same id closes nothing new) carry
	// positionId and orderId, and each order answers by its orderId.
	var legs []map[string]json.RawMessage
	eventuallyNoMismatch(t, 15*time.Second, "both legs FILLED with an orderId", func() string {
		m := obj(t, tr.del(t, "/v1/allOpenPositions", vals("login", itoa(login), "newClientOrderId", sweepID)), 200)
		legs = nil
		if err := json.Unmarshal(m["legs"], &legs); err != nil || len(legs) != 2 {
			return string(m["legs"])
		}
		for _, l := range legs {
			if str(l, "status") != "FILLED" || num(l, "orderId") == 0 {
				return string(m["legs"])
			}
		}
		return ""
	})
	for _, l := range legs {
		o := obj(t, tr.get(t, "/v1/order", vals("login", itoa(login), "orderId", itoa(num(l, "orderId")))), 200)
		if num(o, "positionId") != num(l, "positionId") || str(o, "clientOrderId") != sweepID || str(o, "status") != "FILLED" {
			t.Errorf("leg %v by orderId: %v, want its position, the sweep's id and FILLED", l, o)
		}
	}
	// Another key sharing the login does not own the id: the plain -2013.
	other := &trader{e: e, c: e.client(e.main)}
	res := other.get(t, "/v1/order", vals("login", itoa(login), "origClientOrderId", sweepID))
	wantErr(t, res, http.StatusBadRequest, -2013)
	if strings.Contains(string(res.Body), "sweep") {
		t.Errorf("another key's lookup names the sweep: %s", res.Body)
	}
}
