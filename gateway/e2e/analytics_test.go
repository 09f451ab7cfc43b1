package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5/sim"
	"tradesvc/infra/testenv"
	"tradesvc/projections/audit"
)

// knownOrder is an operation the analytics test asked for, with what it knows of it: the
// price the fill is measured against (the held quote's side, a pending order's price), and
// the wall-clock window within which everything about it happened.
type knownOrder struct {
	coid    string
	login   int64
	symbol  string
	side    string
	typ     string // the order type; "" for closes and changes
	arrival string // "" when the fill has no arrival price (closes carry no quote)
	start   time.Time
	seen    time.Time
	// final is GET /v1/order of the operation once settled.
	final map[string]json.RawMessage
}

// analytics is the running scenario: the service, the simulator and its clock, the orders.
type analytics struct {
	e      *env
	tr     *trader
	sim    *sim.Sim
	clock  *shiftedClock
	orders []*knownOrder
	// windows are the wall-clock spans of every request that traded (sweeps included): no
	// latency the table reports can exceed the longest.
	windows []time.Duration
	// day0 is the UTC day the scenario started (the "today" of the queries).
	day0 string
}

func (x *analytics) order(coid string) *knownOrder {
	for _, o := range x.orders {
		if o.coid == coid {
			return o
		}
	}
	return nil
}

// place sends POST /v1/order, records the order and returns the answer's fields.
func (x *analytics) place(t *testing.T, arrival string, wantStatus int, p map[string]string) map[string]json.RawMessage {
	t.Helper()
	o := &knownOrder{coid: p["newClientOrderId"], symbol: p["symbol"], side: p["side"], typ: p["type"], arrival: arrival,
		start: time.Now()}
	o.login, _ = strconv.ParseInt(p["login"], 10, 64)
	if o.side == "" {
		o.side = "BUY"
	}
	v := vals()
	for k, s := range p {
		v.Set(k, s)
	}
	res := x.tr.post(t, "/v1/order", v)
	if res.Status != wantStatus {
		t.Fatalf("POST /v1/order %v: %d %s", p, res.Status, res.Body)
	}
	x.orders = append(x.orders, o)
	return fields(t, res.Body)
}

// settle waits until GET /v1/order shows the order in status and records what it shows.
func (x *analytics) settle(t *testing.T, coid, status string) map[string]json.RawMessage {
	t.Helper()
	o := x.order(coid)
	o.final = x.tr.awaitOrder(t, o.login, coid, status)
	o.seen = time.Now()
	x.windows = append(x.windows, o.seen.Sub(o.start))
	return o.final
}

// TestAnalyticsAuditAndReplay trades through the HTTPS API of a service whose trade server
// runs a day behind and then jumps to today (so yesterday's P&L exists and a rollover charges
// swaps and expires a DAY order): fills with slippage on a USD and a cent account, a partial
// fill, a rejection, a requote, pending orders that trigger, expire, are modified and
// canceled, an SL close, partial and full closes, a sweep, an SL/TP change, and an order the
// executor could not send in time (-1000) filled by its retry. Then it checks the
// execution-quality rows against the API's answers, runs every example query of
// docs/analytics.md and checks each result against the trading read models and the orders,
// tells stories with `tradesvc audit`'s code, and verifies the replay as `tradesvc replay
// --verify` does, before and after corrupting a live row.
func TestAnalyticsAuditAndReplay(t *testing.T) {
	vars := apptest.Vars(t)
	x := &analytics{clock: &shiftedClock{}, day0: time.Now().UTC().Format(time.DateOnly)}
	x.clock.set(-24 * time.Hour)
	var simAddr string
	x.sim, simAddr = clockedSim(t, vars["TRADESVC_RUN_DIR"], x.clock)

	// An executor that can send nothing in time: the order is refused unsent (-1000).
	e0, p0 := remoteEnv(t, vars, simAddr, map[string]string{"TRADESVC_DISPATCH_WINDOW": "1ns"})
	tr0 := e0.trader(t)
	tr0.waitExecutionPath(t)
	e0.holdOn(t, x.sim, "BTCUSD", "60000.00", "60015.00")
	x.e, x.tr = e0, tr0
	crash := map[string]string{"login": "1001", "symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": "0.01",
		"newClientOrderId": "eq-crash", "newOrderRespType": "RESULT"}
	if m := x.place(t, "60015.00", 503, crash); num(m, "code") != -1000 || str(m, "status") != "REJECTED" {
		t.Fatalf("an order the executor could not send in time: %v", m)
	}
	p0.Stop(t)

	e, _ := remoteEnv(t, vars, simAddr, nil)
	x.e, x.tr = e, &trader{e: e, c: e.svc.Client(tr0.key), key: tr0.key}
	x.tr.waitExecutionPath(t)
	x.yesterday(t)
	x.rollover(t)
	x.today(t)
	x.checkRows(t)
	x.checkQueries(t)
	x.checkAudit(t)
	x.checkVerify(t)
}

// yesterday trades while the trade server's clock is a day behind.
func (x *analytics) yesterday(t *testing.T) {
	e, s := x.e, x.sim
	e.holdOn(t, s, "BTCUSD", "60000.00", "60015.00")
	market := func(login, coid, vol string) map[string]string {
		return map[string]string{"login": login, "symbol": "BTCUSD", "type": "MARKET", "side": "BUY", "volume": vol,
			"newClientOrderId": coid, "newOrderRespType": "RESULT"}
	}
	mustSim(t, s.SetSlippage("BTCUSD", 2))
	x.place(t, "60015.00", 200, market("1001", "eq-a", "0.02"))
	x.settle(t, "eq-a", "FILLED")
	mustSim(t, s.SetSlippage("BTCUSD", 3))
	x.place(t, "60015.00", 200, market("1004", "eq-b", "0.5"))
	x.settle(t, "eq-b", "FILLED")
	mustSim(t, s.SetSlippage("BTCUSD", 0))
	// Two levels of 0.01 lots: an IOC order for 0.03 fills 0.02 in two deals.
	mustSim(t, s.SetLiquidity("BTCUSD", dec.MustParse("0.01"), 2))
	x.place(t, "60015.00", 200, market("1002", "eq-c", "0.03"))
	x.settle(t, "eq-c", "PARTIALLY_FILLED")
	mustSim(t, s.SetLiquidity("BTCUSD", dec.MustParse("0"), 0))
	// USDRUB has no session: the trade server refuses.
	rub := market("1001", "eq-d", "0.01")
	rub["symbol"] = "USDRUB"
	x.place(t, "", 400, rub)
	x.settle(t, "eq-d", "REJECTED")
	// A DAY order that the rollover expires, and a GTC one that triggers.
	x.place(t, "59000.00", 200, map[string]string{"login": "1001", "symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01",
		"price": "59000.00", "timeInForce": "DAY", "newClientOrderId": "eq-e", "newOrderRespType": "RESULT"})
	x.place(t, "59950.00", 200, map[string]string{"login": "1002", "symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01",
		"price": "59950.00", "newClientOrderId": "eq-f", "newOrderRespType": "RESULT"})
	g := market("1001", "eq-g", "0.01")
	g["sl"] = "59900.00"
	x.place(t, "60015.00", 200, g)
	x.settle(t, "eq-g", "FILLED")
	e.holdOn(t, s, "BTCUSD", "59930.00", "59945.00") // eq-f triggers
	x.settle(t, "eq-f", "FILLED")
	e.holdOn(t, s, "BTCUSD", "59890.00", "59905.00") // eq-g's stop loss closes it
	gPos := num(x.order("eq-g").final, "positionId")
	eventuallyNoMismatch(t, 15*time.Second, "the stop loss of eq-g", func() string {
		if _, open := positionsOf(t, x.tr, loginReal1)[gPos]; open {
			return "position still open"
		}
		return ""
	})
	e.holdOn(t, s, "BTCUSD", "60000.00", "60015.00")
	// A partial close of eq-a's position, and a sweep of the cent account.
	aPos := itoa(num(x.order("eq-a").final, "positionId"))
	start := time.Now()
	m := obj(t, x.tr.del(t, "/v1/position", vals("login", "1001", "positionId", aPos, "volume", "0.01",
		"newClientOrderId", "eq-h", "newOrderRespType", "RESULT")), 200)
	if str(m, "status") != "FILLED" {
		t.Fatalf("partial close %v", m)
	}
	x.orders = append(x.orders, &knownOrder{coid: "eq-h", login: 1001, symbol: "BTCUSD", side: "SELL", start: start})
	x.settle(t, "eq-h", "FILLED")
	start = time.Now()
	obj(t, x.tr.del(t, "/v1/allOpenPositions", vals("login", "1004", "newClientOrderId", "eq-sweep")), 200)
	eventuallyNoMismatch(t, 15*time.Second, "the sweep of 1004", func() string {
		if n := len(positionsOf(t, x.tr, loginCent)); n != 0 {
			return strconv.Itoa(n) + " open"
		}
		return ""
	})
	x.windows = append(x.windows, time.Since(start))
}

// rollover moves the trade server's clock to today: the night's swaps are charged on the
// open positions and the DAY order expires.
func (x *analytics) rollover(t *testing.T) {
	x.clock.set(0)
	x.e.holdOn(t, x.sim, "BTCUSD", "60000.00", "60015.00")
	x.settle(t, "eq-e", "EXPIRED")
	aPos := num(x.order("eq-a").final, "positionId")
	eventuallyNoMismatch(t, 15*time.Second, "a swap charged on eq-a's position", func() string {
		p := positionsOf(t, x.tr, loginReal1)[aPos]
		if cmpDec(str(p, "swap"), "0") >= 0 {
			return string(mustJSON(p))
		}
		return ""
	})
}

// today trades after the rollover.
func (x *analytics) today(t *testing.T) {
	e, s := x.e, x.sim
	aPos := itoa(num(x.order("eq-a").final, "positionId"))
	start := time.Now()
	obj(t, x.tr.del(t, "/v1/position", vals("login", "1001", "positionId", aPos, "newClientOrderId", "eq-j",
		"newOrderRespType", "RESULT")), 200)
	x.orders = append(x.orders, &knownOrder{coid: "eq-j", login: 1001, symbol: "BTCUSD", side: "SELL", start: start})
	x.settle(t, "eq-j", "FILLED")

	e.holdOn(t, s, "ETHUSD", "3000.00", "3001.00")
	x.place(t, "3001.00", 200, map[string]string{"login": "1003", "symbol": "ETHUSD", "type": "MARKET", "side": "BUY",
		"volume": "0.01", "newClientOrderId": "eq-k", "newOrderRespType": "RESULT"})
	x.settle(t, "eq-k", "FILLED")

	// The order refused unsent yesterday, retried with the same id: its second attempt fills.
	// The log keeps the first request's receipt on every attempt, so its window starts there.
	m := obj(t, x.tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01", "newClientOrderId", "eq-crash",
		"newOrderRespType", "RESULT")), 200)
	if str(m, "status") != "FILLED" {
		t.Fatalf("retry of eq-crash: %v", m)
	}
	x.settle(t, "eq-crash", "FILLED")

	x.place(t, "59000.00", 200, map[string]string{"login": "1002", "symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01",
		"price": "59000.00", "timeInForce": "GTD", "expiration": itoa(time.Now().Add(2 * time.Second).UnixMilli()),
		"newClientOrderId": "eq-m", "newOrderRespType": "RESULT"})
	x.settle(t, "eq-m", "EXPIRED")

	e.setRemoteFault(t, s, sim.Fault{Mode: sim.FaultRequote})
	x.place(t, "", 400, map[string]string{"login": "1001", "symbol": "BTCUSD", "type": "MARKET", "side": "BUY",
		"volume": "0.01", "newClientOrderId": "eq-n", "newOrderRespType": "RESULT"})
	mustSim(t, s.SetFault(sim.Fault{Mode: sim.FaultNone}))
	x.settle(t, "eq-n", "REJECTED")

	// SL/TP of eq-c's position; a pending order modified, then canceled.
	cPos := itoa(num(x.order("eq-c").final, "positionId"))
	start = time.Now()
	obj(t, x.tr.put(t, "/v1/position", vals("login", "1002", "positionId", cPos, "sl", "59000.00", "tp", "61000.00",
		"newClientOrderId", "eq-o")), 200)
	x.windows = append(x.windows, time.Since(start))
	x.place(t, "59000.00", 200, map[string]string{"login": "1002", "symbol": "BTCUSD", "type": "BUY_LIMIT", "volume": "0.01",
		"price": "59000.00", "newClientOrderId": "eq-p", "newOrderRespType": "RESULT"})
	x.settle(t, "eq-p", "NEW")
	obj(t, x.tr.put(t, "/v1/order", vals("login", "1002", "origClientOrderId", "eq-p", "price", "59100.00",
		"newClientOrderId", "eq-p-mod")), 200)
	obj(t, x.tr.del(t, "/v1/order", vals("login", "1002", "origClientOrderId", "eq-p", "newClientOrderId", "eq-p-cxl")), 200)
	x.settle(t, "eq-p", "CANCELED")
}

// setRemoteFault injects a fault on the test's simulator until the test ends.
func (e *env) setRemoteFault(t *testing.T, s *sim.Sim, f sim.Fault) {
	t.Helper()
	mustSim(t, s.SetFault(f))
	t.Cleanup(func() { _ = s.SetFault(sim.Fault{Mode: sim.FaultNone}) })
}

func mustSim(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// checkAudit tells two stories as `tradesvc audit` does: an order filled with slippage, and
// the order refused unsent then filled by its retry (both attempts, one fill).
func (x *analytics) checkAudit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := x.e.svc.Config
	var res app.AuditResult
	a := x.order("eq-a").final
	eventuallyNoMismatch(t, 30*time.Second, "the story of eq-a, every step applied", func() string {
		var err error
		if res, err = app.Audit(ctx, cfg, audit.Query{Login: 1001, ClientOrderID: "eq-a"}); err != nil {
			t.Fatal(err)
		}
		if len(res.Stories) != 1 {
			return "stories: " + strconv.Itoa(len(res.Stories))
		}
		for _, st := range audit.Steps(res.Stories[0]) {
			logged := st.Name != "received" && st.Name != "recorded" // those are times, not records
			if logged && (st.Applied == nil || !*st.Applied) {
				return st.Name + " not applied"
			}
		}
		return ""
	})
	s := res.Stories[0]
	if !s.Complete || s.Kind != string(trading.KindPlaceOrder) || s.ClientOrderID != "eq-a" || s.Symbol != "BTCUSD" ||
		len(s.Attempts) != 1 || s.ReadModel == nil || s.ReadModel.Status != "FILLED" {
		t.Fatalf("story of eq-a: %+v", s)
	}
	at := s.Attempts[0]
	if at.Who == nil || at.Who.Path != "/v1/order" || at.Who.Method != http.MethodPost || at.Who.APIKeyID == 0 ||
		at.Who.SourceAddr == "" || at.Appended == nil || at.Sent == nil || at.Sent.Tag != s.Tag || len(at.Answers) != 1 ||
		at.Answers[0].Retcode != 10009 || at.Answers[0].Status != "FILLED" {
		t.Fatalf("attempt of eq-a: %+v", at)
	}
	if !(at.Received <= at.Recorded && at.Recorded <= at.Appended.Timestamp && at.Appended.Timestamp <= at.Sent.At &&
		at.Sent.At <= at.Answers[0].At) {
		t.Errorf("eq-a's steps out of order: received %d recorded %d appended %d sent %d answered %d", at.Received,
			at.Recorded, at.Appended.Timestamp, at.Sent.At, at.Answers[0].At)
	}
	if len(s.Deals) != 1 || s.Deals[0].DealID != num(a, "dealId") || cmpDec(s.Deals[0].Price, str(a, "price")) != 0 {
		t.Errorf("deals of eq-a %+v, want deal %d at %s", s.Deals, num(a, "dealId"), str(a, "price"))
	}

	res, err := app.Audit(ctx, cfg, audit.Query{Login: 1001, ClientOrderID: "eq-crash"})
	if err != nil {
		t.Fatal(err)
	}
	// The retry appended its own command beside the insert that found the id taken: an
	// orphan, which the log tells as a void story of its own (never sent, complete).
	var stories []audit.Story
	for _, s := range res.Stories {
		if !s.Void {
			stories = append(stories, s)
			continue
		}
		if !s.Complete || s.ReadModel != nil || len(s.Deals) != 0 || len(s.Attempts) != 1 || s.Attempts[0].Sent != nil ||
			len(s.Attempts[0].Answers) != 1 || s.Attempts[0].Answers[0].Code != -1133 {
			t.Errorf("void story of eq-crash: %+v", s)
		}
	}
	if len(stories) != 1 {
		t.Fatalf("stories of eq-crash: %+v", res.Stories)
	}
	s = stories[0]
	if !s.Complete || len(s.Attempts) != 2 || len(s.Deals) != 1 || s.Deals[0].DealID != num(x.order("eq-crash").final, "dealId") {
		t.Fatalf("story of eq-crash: %+v", s)
	}
	first, second := s.Attempts[0], s.Attempts[1]
	if first.Appended == nil || first.Sent != nil || len(first.Answers) != 1 || first.Answers[0].Code != -1000 ||
		first.Answers[0].Retcode != 0 {
		t.Errorf("attempt 1 of eq-crash (refused unsent): %+v", first)
	}
	// The next attempt re-appends the first request (its requester and receipt) in a new envelope.
	if second.Appended == nil || second.Sent == nil || len(second.Answers) != 1 || second.Answers[0].Status != "FILLED" ||
		second.Received != first.Received || second.Recorded <= first.Answers[0].At ||
		second.Appended.Offset <= first.Appended.Offset || *second.Who != *first.Who {
		t.Errorf("attempt 2 of eq-crash: %+v", second)
	}

	// The same operations found by ticket.
	cPos := num(x.order("eq-c").final, "positionId")
	res, err = app.Audit(ctx, cfg, audit.Query{PositionID: cPos})
	if err != nil {
		t.Fatal(err)
	}
	coids := map[string]bool{}
	for _, s := range res.Stories {
		coids[s.ClientOrderID] = s.Complete
	}
	if !coids["eq-c"] || !coids["eq-o"] {
		t.Errorf("the stories of position %d: %v, want eq-c (opened it) and eq-o (its SL/TP), complete", cPos, coids)
	}
}

// checkVerify rebuilds the trading read models as `tradesvc replay --verify` does: equal to
// the live ones; then a corrupted live row is found and named.
func (x *analytics) checkVerify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := x.e.svc.Config
	rep, err := app.VerifyReplay(ctx, cfg, testenv.Logger(), app.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Equal {
		t.Fatalf("the replayed read models differ from the live ones: %+v", rep.Differences)
	}
	for _, tb := range rep.Tables {
		if tb.Live == 0 || tb.Live != tb.Replayed {
			t.Errorf("%s: %d live rows, %d replayed", tb.Table, tb.Live, tb.Replayed)
		}
	}
	cPos := num(x.order("eq-c").final, "positionId")
	if _, err := x.e.svc.PG.Exec(ctx, `UPDATE rm.positions SET volume = volume + 1 WHERE position_id = $1`, cPos); err != nil {
		t.Fatal(err)
	}
	rep, err = app.VerifyReplay(ctx, cfg, testenv.Logger(), app.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := "position_id=" + itoa(cPos)
	if rep.Equal || len(rep.Differences) != 1 || rep.Differences[0].Table != "rm.positions" || rep.Differences[0].Key != key ||
		rep.Differences[0].Column != "volume" {
		t.Fatalf("after corrupting %s of rm.positions: %+v", key, rep.Differences)
	}
}
