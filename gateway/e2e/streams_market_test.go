package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"tradesvc/events/dec"
)

// TestStreams starts one whole service and proves the stream rules over WSS with a real
// WebSocket client: market streams fed by the simulator through Kafka and the market
// projection, user data streams fed by the projection change feed.
func TestStreams(t *testing.T) {
	e := startStreamsEnv(t, "BTCUSD", "ETHUSD", "XRPUSD")
	t.Run("market: subscribe, list, unsubscribe", func(t *testing.T) { testStreamControl(t, e) })
	t.Run("market: every control error, none closes", func(t *testing.T) { testStreamControlErrors(t, e) })
	t.Run("market: payloads of each stream type", func(t *testing.T) { testStreamPayloads(t, e) })
	t.Run("market: pre-subscribed and combined URLs", func(t *testing.T) { testStreamURLs(t, e) })
	t.Run("market: invalid name in the URL closes with 1000", func(t *testing.T) { testStreamInvalidURLName(t, e) })
	t.Run("market: message rate closes with 1008", func(t *testing.T) { testStreamRate(t, e) })
	t.Run("market: message size closes with 1009", func(t *testing.T) { testStreamSize(t, e) })
	t.Run("market: a slow client is closed with 1011", func(t *testing.T) { testStreamSlowClient(t, e) })
	t.Run("market: 20 connections per client address", func(t *testing.T) { testStreamAddressCap(t, e) })
	t.Run("market: plain HTTP to a stream URL", func(t *testing.T) { testStreamPlainHTTP(t, e) })
	t.Run("user: listen key lifecycle and expiry", func(t *testing.T) { testListenKeyLifecycle(t, e) })
	t.Run("user: a deposit is an ACCOUNT_UPDATE", func(t *testing.T) { testUserDeposit(t, e) })
	t.Run("user: a login leaving the scope", func(t *testing.T) { testUserScope(t, e) })
	t.Run("user: trading events", func(t *testing.T) { testUserTradingEvents(t, e) })
	t.Run("user: a close-all sweep, its legs and its id", func(t *testing.T) { testUserSweep(t, e) })
	t.Run("user: -1017 while trading is switched off", func(t *testing.T) { testUserTradingOff(t, e) })
}

func testStreamControl(t *testing.T, e *env) {
	c := e.ws(t, "/ws")
	if m := c.reply(`{"method":"SUBSCRIBE","params":["BTCUSD@tick","ETHUSD@kline_1m","BTCUSD@tick"],"id":1}`, "1"); string(m["result"]) != "null" || len(m) != 2 {
		t.Fatalf("SUBSCRIBE reply %v, want result null id 1", m)
	}
	tick := c.await(15*time.Second, "a BTCUSD tick", func(m map[string]json.RawMessage) bool { return str(m, "e") == "tick" })
	if str(tick, "s") != "BTCUSD" {
		t.Errorf("tick of %s", tick["s"])
	}
	c.await(15*time.Second, "an ETHUSD 1m kline", func(m map[string]json.RawMessage) bool {
		return str(m, "e") == "kline" && str(m, "s") == "ETHUSD"
	})
	list := c.reply(`{"method":"LIST_SUBSCRIPTIONS","id":2}`, "2")
	if string(list["result"]) != `["BTCUSD@tick","ETHUSD@kline_1m"]` {
		t.Fatalf("LIST %s, want the two names once each", list["result"])
	}
	// Unsubscribing a stream that is not subscribed is a no-op that succeeds.
	if m := c.reply(`{"method":"UNSUBSCRIBE","params":["BTCUSD@tick","XRPUSD@ticker"],"id":3}`, "3"); string(m["result"]) != "null" {
		t.Fatalf("UNSUBSCRIBE reply %v", m)
	}
	if m := c.reply(`{"method":"LIST_SUBSCRIPTIONS","id":4}`, "4"); string(m["result"]) != `["ETHUSD@kline_1m"]` {
		t.Fatalf("LIST after UNSUBSCRIBE %s", m["result"])
	}
	// Nothing of the unsubscribed stream arrives after the reply to a later request.
	c.reply(`{"method":"LIST_SUBSCRIPTIONS","id":5}`, "5")
	for i := 0; i < 5; i++ {
		m := c.await(15*time.Second, "an ETHUSD kline", func(m map[string]json.RawMessage) bool { return true })
		if str(m, "e") != "kline" {
			t.Fatalf("after UNSUBSCRIBE got %v", m)
		}
	}
}

func testStreamControlErrors(t *testing.T, e *env) {
	c := e.ws(t, "/ws")
	for _, tc := range []struct {
		frame string
		code  int
		id    string
	}{
		{`{"method":"SUBSCRIBE","params":["btcusd@tick"],"id":10}`, -1121, "10"},     // case differs: no such symbol
		{`{"method":"SUBSCRIBE","params":["NOPE@tick"],"id":11}`, -1121, "11"},       // nonexistent symbol
		{`{"method":"SUBSCRIBE","params":["BTCUSD@trade"],"id":12}`, -1121, "12"},    // unknown type
		{`{"method":"SUBSCRIBE","params":["BTCUSD"],"id":13}`, -1121, "13"},          // malformed
		{`{"method":"SUBSCRIBE","params":["BTCUSD@kline_1w"],"id":14}`, -1120, "14"}, // unsupported interval
		{`{"method":"SUBSCRIBE","params":["BTCUSD@tick"]}`, -1102, "null"},           // id missing
		{`{"method":"SUBSCRIBE","params":["BTCUSD@tick"],"id":"15"}`, -1102, "null"}, // id not an unsigned integer
		{`{"method":"SUBSCRIBE","params":["BTCUSD@tick"],"id":-1}`, -1102, "null"},
		{`{"params":["BTCUSD@tick"],"id":16}`, -1102, "16"},                      // method missing
		{`{"method":"SUBSCRIBE","id":17}`, -1102, "17"},                          // params missing
		{`{"method":"UNSUBSCRIBE","params":"BTCUSD@tick","id":18}`, -1102, "18"}, // params wrongly typed
		{`{"method":"PING","id":19}`, -1020, "19"},                               // unknown method
		{`SUBSCRIBE BTCUSD@tick`, -1130, "null"},                                 // not JSON
		{`[1,2,3]`, -1130, "null"},                                               // not an object
	} {
		wantControlError(t, c.reply(tc.frame, tc.id), tc.code, tc.id)
	}
	// SUBSCRIBE is all-or-nothing: a bad name among good ones subscribes none of them.
	wantControlError(t, c.reply(`{"method":"SUBSCRIBE","params":["ETHUSD@tick","ETHUSD@nope"],"id":20}`, "20"), -1121, "20")
	// Over 200 streams on the connection: -1101, nothing subscribed.
	names := allStreamNames(e)
	if len(names) < 201 {
		t.Fatalf("only %d stream names exist", len(names))
	}
	params, _ := json.Marshal(names[:201])
	wantControlError(t, c.reply(fmt.Sprintf(`{"method":"SUBSCRIBE","params":%s,"id":21}`, params), "21"), -1101, "21")
	// Error frames never closed the connection, and the refused SUBSCRIBEs subscribed nothing.
	if m := c.reply(`{"method":"LIST_SUBSCRIPTIONS","id":22}`, "22"); string(m["result"]) != "[]" {
		t.Fatalf("after refused SUBSCRIBEs the list is %s, want []", m["result"])
	}
}

// allStreamNames lists every valid stream name of the service's symbols (12 per symbol).
func allStreamNames(e *env) []string {
	var syms []string
	for s := range e.digits {
		syms = append(syms, s)
	}
	sort.Strings(syms)
	var out []string
	for _, s := range syms {
		for _, suffix := range []string{"tick", "bookTicker", "ticker", "depth", "kline_1m", "kline_5m", "kline_15m",
			"kline_30m", "kline_1h", "kline_2h", "kline_4h", "kline_1d"} {
			out = append(out, s+"@"+suffix)
		}
	}
	return out
}

func testStreamPayloads(t *testing.T, e *env) {
	c := e.ws(t, "/ws")
	c.reply(`{"method":"SUBSCRIBE","params":["XRPUSD@tick","XRPUSD@bookTicker","XRPUSD@kline_5m","XRPUSD@ticker","BTCUSD@depth","ETHUSD@depth","BTCUSD@tick"],"id":1}`, "1")
	seen := map[string]map[string]json.RawMessage{}
	btcTicks := 0
	c.await(30*time.Second, "a frame of each stream", func(m map[string]json.RawMessage) bool {
		kind := str(m, "e") + "/" + str(m, "s")
		if kind == "depth/BTCUSD" {
			t.Fatalf("@depth delivered on BTCUSD, which is not enabled: %v", m)
		}
		if kind == "tick/BTCUSD" {
			btcTicks++ // a depth frame of an enabled symbol comes between its tick and klines
		}
		seen[kind] = m
		_, t1 := seen["tick/XRPUSD"]
		_, t2 := seen["bookTicker/XRPUSD"]
		_, t3 := seen["kline/XRPUSD"]
		_, t4 := seen["ticker/XRPUSD"]
		_, t5 := seen["depth/ETHUSD"]
		return t1 && t2 && t3 && t4 && t5 && btcTicks >= 2
	})
	d := e.digits["XRPUSD"]
	tick := seen["tick/XRPUSD"]
	if keysSorted(tick) != "E,T,a,ad,b,bd,e,l,s,v" {
		t.Errorf("tick fields %s, want exactly e E s b a l v bd ad T", keysSorted(tick))
	}
	wantDecimal(t, "tick b", tick["b"], d)
	wantDecimal(t, "tick a", tick["a"], d)
	wantDecimal(t, "tick l", tick["l"], d)
	for _, f := range []string{"v", "bd", "ad", "T", "E"} {
		wantInt(t, "tick "+f, tick[f])
	}
	book := seen["bookTicker/XRPUSD"]
	wantDecimal(t, "bookTicker b", book["b"], d)
	if str(book, "B") != "0" || str(book, "A") != "0" {
		t.Errorf("bookTicker quantities %v, want \"0\"", book)
	}
	var k struct {
		T  int64  `json:"t"`
		CT int64  `json:"T"`
		I  string `json:"i"`
		N  int64  `json:"n"`
		X  *bool  `json:"x"`
	}
	kl := seen["kline/XRPUSD"]
	if err := json.Unmarshal(kl["k"], &k); err != nil || k.I != "5m" || k.T%300_000 != 0 || k.CT != k.T+299_999 || k.N < 1 || k.X == nil {
		t.Errorf("kline %s", kl["k"])
	}
	var bar map[string]json.RawMessage
	_ = json.Unmarshal(kl["k"], &bar)
	for _, f := range []string{"o", "h", "l", "c"} {
		wantDecimal(t, "kline "+f, bar[f], d)
	}
	ticker := seen["ticker/XRPUSD"]
	for _, f := range []string{"o", "h", "l", "c", "b", "a"} {
		wantDecimal(t, "ticker "+f, ticker[f], d)
	}
	wantDecimal(t, "ticker P", ticker["P"], 2)
	depth := seen["depth/ETHUSD"]
	var levels struct {
		B [][2]string `json:"b"`
		A [][2]string `json:"a"`
	}
	if err := json.Unmarshal(mustJSON(depth), &levels); err != nil ||
		len(levels.B) != 1 || len(levels.A) != 1 || levels.B[0][1] != "0" || levels.A[0][1] != "0" {
		t.Errorf("depth %v", depth)
	}
}

func keysSorted(m map[string]json.RawMessage) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

func testStreamURLs(t *testing.T, e *env) {
	pre := e.ws(t, "/ws/BTCUSD@bookTicker")
	if m := pre.reply(`{"method":"LIST_SUBSCRIPTIONS","id":1}`, "1"); string(m["result"]) != `["BTCUSD@bookTicker"]` {
		t.Fatalf("pre-subscribed list %s", m["result"])
	}
	m := pre.await(15*time.Second, "a BTCUSD bookTicker", func(m map[string]json.RawMessage) bool { return true })
	if str(m, "e") != "bookTicker" || str(m, "s") != "BTCUSD" {
		t.Fatalf("pre-subscribed payload %v, want the unwrapped bookTicker", m)
	}
	comb := e.ws(t, "/stream?streams=BTCUSD@tick/ETHUSD@bookTicker")
	got := map[string]bool{}
	comb.await(20*time.Second, "both combined streams", func(m map[string]json.RawMessage) bool {
		if _, ok := m["id"]; ok {
			return false
		}
		var data map[string]json.RawMessage
		if len(m) != 2 || json.Unmarshal(m["data"], &data) != nil {
			t.Fatalf("combined frame %v, want exactly stream and data", m)
		}
		name := str(m, "stream")
		if want := str(data, "s") + "@" + str(data, "e"); name != want {
			t.Fatalf("frame of %s carries %s", name, m["data"])
		}
		got[name] = true
		return got["BTCUSD@tick"] && got["ETHUSD@bookTicker"]
	})
	// Control frames work on the combined endpoint; subscribed payloads are wrapped too.
	comb.reply(`{"method":"SUBSCRIBE","params":["XRPUSD@tick"],"id":2}`, "2")
	comb.await(15*time.Second, "XRPUSD@tick wrapped", func(m map[string]json.RawMessage) bool { return str(m, "stream") == "XRPUSD@tick" })
	// The symbol may be URL-encoded where needed.
	enc := e.ws(t, "/stream?streams=BTCUSD%40tick")
	enc.await(15*time.Second, "BTCUSD@tick", func(m map[string]json.RawMessage) bool { return str(m, "stream") == "BTCUSD@tick" })
}

func testStreamInvalidURLName(t *testing.T, e *env) {
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/ws/BTCUSD@trade", -1121},
		{"/ws/btcusd@tick", -1121},
		{"/ws/BTCUSD@kline_1w", -1120},
		{"/stream?streams=BTCUSD@tick/ETHUSD@nope", -1121},
		{"/stream?streams=BTCUSD@tick//ETHUSD@tick", -1121},
	} {
		c := e.ws(t, tc.path)
		code, reason, frames := c.closed(10 * time.Second)
		if code != websocket.CloseNormalClosure || reason != "invalid stream name" || len(frames) != 1 {
			t.Errorf("%s: closed %d %q after %d frames, want one error frame then 1000 invalid stream name", tc.path, code, reason, len(frames))
			continue
		}
		wantControlError(t, fields(t, frames[0]), tc.code, "null")
	}
}

func testStreamRate(t *testing.T, e *env) {
	c := e.ws(t, "/ws")
	for i := 0; i < 50; i++ { // far over 10 a second, so the limit trips however the server is scheduled
		if err := c.ws.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"method":"LIST_SUBSCRIPTIONS","id":%d}`, i)); err != nil {
			break // the server may already have closed
		}
	}
	code, reason, frames := c.closed(15 * time.Second)
	if code != websocket.ClosePolicyViolation || reason != "message rate exceeded" {
		t.Fatalf("closed %d %q, want 1008 message rate exceeded", code, reason)
	}
	if len(frames) > 10 {
		t.Errorf("%d replies before the close: the rate admits 10 a second", len(frames))
	}
	// Unsolicited pongs are not messages: a burst of them is not a breach.
	p := e.ws(t, "/ws")
	for i := 0; i < 30; i++ {
		if err := p.ws.WriteControl(websocket.PongMessage, []byte("unsolicited"), time.Now().Add(time.Second)); err != nil {
			t.Fatalf("pong %d: %v", i, err)
		}
	}
	if m := p.reply(`{"method":"LIST_SUBSCRIPTIONS","id":1}`, "1"); string(m["result"]) != "[]" {
		t.Fatalf("after 30 pongs: %v", m)
	}
}

func testStreamSize(t *testing.T, e *env) {
	c := e.ws(t, "/ws")
	pad := strings.Repeat(" ", 64<<10-len(`{"method":"LIST_SUBSCRIPTIONS","id":1}`))
	if m := c.reply(`{"method":"LIST_SUBSCRIPTIONS","id":1}`+pad, "1"); string(m["result"]) != "[]" {
		t.Fatalf("a 64 KiB frame: %v", m)
	}
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(`{"method":"LIST_SUBSCRIPTIONS","id":2}`+pad+" ")); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := c.closed(15 * time.Second); code != websocket.CloseMessageTooBig {
		t.Fatalf("a frame of 64 KiB + 1 closed with %d, want 1009", code)
	}
}

func testStreamSlowClient(t *testing.T, e *env) {
	const sym = "LINKUSD"
	// Ten frames a tick for the slow client, one for the reading client.
	streams := "/stream?streams=" + sym + "@tick/" + sym + "@bookTicker"
	for _, iv := range []string{"1m", "5m", "15m", "30m", "1h", "2h", "4h", "1d"} {
		streams += "/" + sym + "@kline_" + iv
	}
	slow := e.wsWith(t, e.wsDialer("", 4096), streams)
	slow.reply(`{"method":"LIST_SUBSCRIPTIONS","id":1}`, "1")
	fast := e.ws(t, "/stream?streams="+sym+"@tick")
	fast.reply(`{"method":"LIST_SUBSCRIPTIONS","id":1}`, "1")
	// The slow client now reads nothing while the simulator publishes ticks (the symbol held,
	// so the generator adds none); the reading client takes each chunk of 25 ticks (within its
	// queue of 32) before the next is published.
	s := e.svc.App.Sim()
	e.holdQuote(t, sym, "15.000", "15.010")
	t.Cleanup(func() { e.releaseQuote(t, sym) })
	for i := 1; i <= 5000; i++ {
		bid := dec.Add(dec.MustParse("15"), dec.New(int64(i), -3))
		if err := s.PushTick(sym, bid, dec.Add(bid, dec.MustParse("0.010"))); err != nil {
			t.Fatalf("push tick: %v", err)
		}
		if i%25 == 0 {
			fast.await(30*time.Second, "tick "+dec.String(bid)+" on the reading client", func(m map[string]json.RawMessage) bool {
				var d map[string]json.RawMessage
				_ = json.Unmarshal(m["data"], &d)
				return str(m, "stream") == sym+"@tick" && str(d, "b") != "" && cmpDec(str(d, "b"), dec.String(bid)) == 0
			})
		}
	}
	code, reason, frames := slow.closed(60 * time.Second)
	if code != websocket.CloseInternalServerErr || !strings.HasPrefix(reason, "queue overflow") {
		t.Fatalf("the slow client closed with %d %q after %d frames, want 1011 queue overflow", code, reason, len(frames))
	}
	// The reading client was not dropped.
	if m := fast.reply(`{"method":"LIST_SUBSCRIPTIONS","id":2}`, "2"); !strings.Contains(string(m["result"]), sym+"@tick") {
		t.Fatalf("reading client after the burst: %v", m)
	}
}

func testStreamAddressCap(t *testing.T, e *env) {
	own := e.wsDialer("127.0.0.77", 0) // this test's own client address
	var conns []*wsClient
	for i := 0; i < 20; i++ {
		conns = append(conns, e.wsWith(t, own, "/ws"))
	}
	status, code := e.wsRefused(t, own, "/ws/BTCUSD@tick")
	if status != http.StatusServiceUnavailable || code != -1008 {
		t.Fatalf("21st connection from one address: %d %d, want 503 -1008", status, code)
	}
	// Another address is not affected, and a closed connection frees its slot.
	e.wsWith(t, e.wsDialer("127.0.0.78", 0), "/ws").ws.Close()
	_ = conns[0].ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	_, _, _ = conns[0].closed(10 * time.Second)
	poll(t, 10*time.Second, 50*time.Millisecond, "a freed slot", func() bool {
		c, _, err := own.Dial(e.wsURL("/ws"), nil)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

func testStreamPlainHTTP(t *testing.T, e *env) {
	for _, p := range []string{"/ws", "/ws/BTCUSD@tick", "/stream?streams=BTCUSD@tick", "/ws/" + strings.Repeat("A", 64)} {
		path, query, _ := strings.Cut(p, "?")
		res, err := e.client(noKey).Raw(context.Background(), http.MethodGet, path, query, "", false)
		wantErr(t, check(t, res, err), http.StatusBadRequest, -1020)
	}
}
