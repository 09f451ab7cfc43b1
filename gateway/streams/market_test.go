package streams

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"tradesvc/events/dec"
	"tradesvc/query"
)

// synced sends LIST_SUBSCRIPTIONS and returns its result: once it is answered, every earlier
// frame of the connection (and a pre-subscription) has been applied.
func (c *client) synced() []string {
	c.t.Helper()
	c.send(`{"method":"LIST_SUBSCRIPTIONS","id":424242}`)
	for {
		m := c.next()
		if string(m["id"]) != "424242" {
			continue
		}
		var names []string
		if err := json.Unmarshal(m["result"], &names); err != nil {
			c.t.Fatalf("LIST_SUBSCRIPTIONS reply %v", m)
		}
		return names
	}
}

func fieldNames(m map[string]json.RawMessage) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

func TestTickStreamCarriesExactlyTheSpecFieldsAtTheSymbolDigits(t *testing.T) {
	ts := startServer(t, Config{}, Deps{})
	c := ts.dial(t, "/ws/BTCUSD@tick")
	if got := c.synced(); len(got) != 1 || got[0] != "BTCUSD@tick" {
		t.Fatalf("pre-subscribed = %v", got)
	}
	ts.srv.Market().TickApplied(tickQuote("BTCUSD", "60000.5", 1_700_000_000_123))
	m := c.next()
	if fieldNames(m) != "E,T,a,ad,b,bd,e,l,s,v" {
		t.Fatalf("tick fields = %s, want exactly e E s b a l v bd ad T", fieldNames(m))
	}
	want := map[string]string{"e": `"tick"`, "s": `"BTCUSD"`, "b": `"60000.50"`, "a": `"60001.50"`, "l": `"60000.50"`,
		"v": "3", "bd": "1", "ad": "-1", "T": "1700000000123"}
	for k, v := range want {
		if string(m[k]) != v {
			t.Errorf("%s = %s, want %s", k, m[k], v)
		}
	}
}

func TestCombinedStreamWrapsEachPayloadWithItsStreamName(t *testing.T) {
	ts := startServer(t, Config{}, Deps{})
	c := ts.dial(t, "/stream?streams=BTCUSD@bookTicker/EURUSD@tick")
	if got := c.synced(); len(got) != 2 {
		t.Fatalf("combined subscriptions = %v", got)
	}
	ts.srv.Market().TickApplied(tickQuote("BTCUSD", "10", 5))
	m := c.next()
	if string(m["stream"]) != `"BTCUSD@bookTicker"` {
		t.Fatalf("stream = %s", m["stream"])
	}
	var data map[string]json.RawMessage
	if err := json.Unmarshal(m["data"], &data); err != nil {
		t.Fatalf("data %s", m["data"])
	}
	if fieldNames(data) != "A,B,E,T,a,b,e,s" || string(data["b"]) != `"10.00"` || string(data["B"]) != `"0"` || string(data["A"]) != `"0"` {
		t.Fatalf("bookTicker payload = %s", m["data"])
	}
}

func TestKlineStreamSendsTheBarOnEveryChangeAndItsCloseWhenTheNextBucketStarts(t *testing.T) {
	ts := startServer(t, Config{}, Deps{})
	c := ts.dial(t, "/ws/EURUSD@kline_1m")
	c.synced()
	mkt := ts.srv.Market()
	mkt.TickApplied(tickQuote("EURUSD", "1.1", 60_000))
	mkt.TickApplied(tickQuote("EURUSD", "1.2", 61_000))
	mkt.TickApplied(tickQuote("EURUSD", "1.3", 120_500))
	type bar struct {
		T, CT         int64
		I, O, H, L, C string
		N             int64
		X             bool
	}
	read := func() bar {
		m := c.next()
		if string(m["e"]) != `"kline"` {
			t.Fatalf("frame %v", m)
		}
		var k struct {
			T  int64  `json:"t"`
			CT int64  `json:"T"`
			I  string `json:"i"`
			O  string `json:"o"`
			H  string `json:"h"`
			L  string `json:"l"`
			C  string `json:"c"`
			N  int64  `json:"n"`
			X  bool   `json:"x"`
		}
		if err := json.Unmarshal(m["k"], &k); err != nil {
			t.Fatalf("k = %s", m["k"])
		}
		return bar{k.T, k.CT, k.I, k.O, k.H, k.L, k.C, k.N, k.X}
	}
	want := []bar{
		{60_000, 119_999, "1m", "1.10000", "1.10000", "1.10000", "1.10000", 1, false},
		{60_000, 119_999, "1m", "1.10000", "1.20000", "1.10000", "1.20000", 2, false},
		{60_000, 119_999, "1m", "1.10000", "1.20000", "1.10000", "1.20000", 2, true},
		{120_000, 179_999, "1m", "1.30000", "1.30000", "1.30000", "1.30000", 1, false},
	}
	for i, w := range want {
		if got := read(); got != w {
			t.Fatalf("frame %d = %+v, want %+v", i, got, w)
		}
	}
}

func TestTickerStreamDerivesThePercentageFromOpenAndLast(t *testing.T) {
	ts := startServer(t, Config{}, Deps{})
	c := ts.dial(t, "/ws/ETHUSD@ticker")
	c.synced()
	ts.srv.Market().DayStatsApplied(query.DayStats{Symbol: "ETHUSD", Open: dec.MustParse("2000"), Last: dec.MustParse("2050.6"),
		High: dec.MustParse("2100"), Low: dec.MustParse("1990"), PriceChange: dec.MustParse("50.5"),
		PriceChangePercent: dec.MustParse("9.99"), Volatility: dec.MustParse("1.234"), Volume: dec.MustParse("12.5"),
		TradeDeals: 7, BuyOrders: 3, SellOrders: 4, Time: 99})
	m := c.next()
	want := map[string]string{"e": `"ticker"`, "s": `"ETHUSD"`, "o": `"2000.00"`, "c": `"2050.60"`, "h": `"2100.00"`,
		"l": `"1990.00"`, "p": `"50.50"`, "P": `"2.53"`, "vt": `"1.23"`, "v": `"12.5"`, "n": "7", "bo": "3", "so": "4", "T": "99"}
	for k, v := range want {
		if string(m[k]) != v {
			t.Errorf("%s = %s, want %s", k, m[k], v)
		}
	}
}

func TestDepthDeliversOnlyForSymbolsEnabledByConfiguration(t *testing.T) {
	ts := startServer(t, Config{DepthSymbols: []string{"BTCUSD"}}, Deps{})
	c := ts.dial(t, "/stream?streams=EURUSD@depth/EURUSD@tick/BTCUSD@depth")
	c.synced()
	ts.srv.Market().TickApplied(tickQuote("EURUSD", "1.1", 1))
	ts.srv.Market().TickApplied(tickQuote("BTCUSD", "7", 2))
	first, second := c.next(), c.next()
	if string(first["stream"]) != `"EURUSD@tick"` {
		t.Fatalf("first frame is %s, want EURUSD@tick (EURUSD@depth is not enabled)", first["stream"])
	}
	if string(second["stream"]) != `"BTCUSD@depth"` {
		t.Fatalf("second frame is %s, want BTCUSD@depth", second["stream"])
	}
	var d struct {
		B [][2]string `json:"b"`
		A [][2]string `json:"a"`
	}
	if err := json.Unmarshal(second["data"], &d); err != nil || len(d.B) != 1 || d.B[0] != [2]string{"7.00", "0"} || d.A[0] != [2]string{"8.00", "0"} {
		t.Fatalf("depth payload %s", second["data"])
	}
}

func TestServerPingsAndDropsOnlyTheClientThatNeverAnswers(t *testing.T) {
	ts := startServer(t, Config{PingInterval: 20 * time.Millisecond, PongTimeout: 300 * time.Millisecond}, Deps{})
	alive := ts.dial(t, "/ws")
	pings := make(chan struct{}, 100)
	alive.ws.SetPingHandler(func(data string) error {
		select {
		case pings <- struct{}{}:
		default:
		}
		return alive.ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	col := collect(alive.ws) // reading is what answers pings
	mute := ts.dial(t, "/ws")
	mute.ws.SetPingHandler(func(string) error { return nil }) // reads pings, never answers
	code, reason, _ := mute.closed(10 * time.Second)
	if code != websocket.CloseGoingAway || reason != "pong timeout" {
		t.Fatalf("mute client closed with %d %q, want 1001 pong timeout", code, reason)
	}
	// The answering client, connected first, outlived the mute one's timeout and still works.
	alive.send(`{"method":"LIST_SUBSCRIPTIONS","id":1}`)
	for deadline := time.Now().Add(10 * time.Second); col.count() == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if col.err != nil || len(col.frames) != 1 || string(col.frames[0]) != `{"result":[],"id":1}` {
		t.Fatalf("answering client: frames %q, err %v", col.frames, col.err)
	}
	if len(pings) == 0 {
		t.Fatal("the server sent no ping")
	}
}

func TestUnsolicitedPongsNeitherCountTowardTheRateNorKeepAConnectionAlive(t *testing.T) {
	ts := startServer(t, Config{PingInterval: time.Hour, PongTimeout: 500 * time.Millisecond}, Deps{})
	c := ts.dial(t, "/ws")
	for i := 0; i < 40; i++ { // four times the message rate within the first half-second
		if err := c.ws.WriteControl(websocket.PongMessage, []byte("x"), time.Now().Add(time.Second)); err != nil {
			t.Fatalf("pong %d: %v", i, err)
		}
	}
	code, reason, _ := c.closed(10 * time.Second)
	if code != websocket.CloseGoingAway || reason != "pong timeout" {
		t.Fatalf("closed with %d %q, want 1001 pong timeout (not 1008: pongs are not messages)", code, reason)
	}
}

func TestConnectionLifetimeEndsWithCode1000(t *testing.T) {
	ts := startServer(t, Config{Lifetime: 200 * time.Millisecond}, Deps{})
	c := ts.dial(t, "/ws/BTCUSD@tick")
	code, reason, _ := c.closed(10 * time.Second)
	if code != websocket.CloseNormalClosure || reason != "connection lifetime reached" {
		t.Fatalf("closed with %d %q", code, reason)
	}
	waitOpen(t, ts.srv, 0)
}

func TestCapsRefuseBeforeTheUpgradePerAddressAndOverall(t *testing.T) {
	ts := startServer(t, Config{MaxConnsPerAddr: 2, MaxConns: 3}, Deps{})
	a := dialer("127.0.0.21", 0)
	ts.dialWith(t, a, "/ws")
	ts.dialWith(t, a, "/ws")
	if status, code := ts.refused(t, a, "/ws"); status != http.StatusServiceUnavailable || code != -1008 {
		t.Fatalf("third from one address: %d %d, want 503 -1008", status, code)
	}
	b := dialer("127.0.0.22", 0)
	ts.dialWith(t, b, "/ws") // another address still gets in: 3 open overall
	if status, code := ts.refused(t, b, "/ws"); status != http.StatusServiceUnavailable || code != -1008 {
		t.Fatalf("over overall capacity: %d %d, want 503 -1008", status, code)
	}
}

func TestAClosedConnectionFreesItsSlot(t *testing.T) {
	ts := startServer(t, Config{MaxConnsPerAddr: 1}, Deps{})
	d := dialer("127.0.0.23", 0)
	c := ts.dialWith(t, d, "/ws")
	waitOpen(t, ts.srv, 1)
	_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	waitOpen(t, ts.srv, 0)
	ts.dialWith(t, d, "/ws")
}

func TestPlainHTTPToAStreamURLIsAnswered400With1020(t *testing.T) {
	ts := startServer(t, Config{}, Deps{})
	for _, p := range []string{"/ws", "/ws/BTCUSD@tick", "/stream?streams=BTCUSD@tick"} {
		status, body := ts.httpGet(t, p)
		if status != http.StatusBadRequest || !strings.Contains(string(body), `"code":-1020`) {
			t.Errorf("GET %s: %d %s, want 400 -1020", p, status, body)
		}
	}
}

func TestInboundMessageRateAndSizeLimitsCloseWith1008And1009(t *testing.T) {
	ts := startServer(t, Config{}, Deps{})
	fast := ts.dial(t, "/ws")
	for i := 0; i < 30; i++ {
		fast.send(fmt.Sprintf(`{"method":"LIST_SUBSCRIPTIONS","id":%d}`, i))
	}
	code, reason, frames := fast.closed(10 * time.Second)
	if code != websocket.ClosePolicyViolation || reason != "message rate exceeded" {
		t.Fatalf("burst closed with %d %q", code, reason)
	}
	if len(frames) != 10 {
		t.Fatalf("%d replies before the close, want the 10 within the rate", len(frames))
	}
	big := ts.dial(t, "/ws")
	if err := big.ws.WriteMessage(websocket.TextMessage, make([]byte, 64<<10)); err != nil {
		t.Fatal(err)
	}
	if m := big.next(); string(m["code"]) != "-1130" {
		t.Fatalf("a 64 KiB frame (within the limit) got %v, want the -1130 error frame", m)
	}
	if err := big.ws.WriteMessage(websocket.TextMessage, make([]byte, 64<<10+1)); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := big.closed(10 * time.Second); code != websocket.CloseMessageTooBig {
		t.Fatalf("a frame over 64 KiB closed with %d, want 1009", code)
	}
}

// A client that stops reading fills its own queue and is closed with 1011; a reading client
// on the same streams receives every frame meanwhile.
func TestASlowClientIsClosedWith1011WhileOthersReceiveEverything(t *testing.T) {
	ts := startServer(t, Config{SendQueue: 64, WriteTimeout: time.Minute}, Deps{})
	const streams = "/stream?streams=BTCUSD@tick/BTCUSD@bookTicker/BTCUSD@kline_1m/BTCUSD@kline_5m"
	slow := ts.dialWith(t, dialer("", 4096), streams)
	slow.synced()
	fast := ts.dial(t, streams)
	fast.synced()
	col := collect(fast.ws)
	const ticks = 5000
	for i := 0; i < ticks; i++ {
		ts.srv.Market().TickApplied(tickQuote("BTCUSD", fmt.Sprintf("%d.25", 60000+i), int64(1_700_000_000_000+i)))
		if i%12 == 11 { // pace the feed to what the reading client takes (48 frames fit its queue)
			for deadline := time.Now().Add(30 * time.Second); col.count() < 4*(i+1) && time.Now().Before(deadline); {
				time.Sleep(50 * time.Microsecond)
			}
		}
	}
	code, reason, frames := slow.closed(time.Minute)
	if code != websocket.CloseInternalServerErr || !strings.HasPrefix(reason, "queue overflow") {
		t.Fatalf("slow client closed with %d %q", code, reason)
	}
	if len(frames) >= 4*ticks {
		t.Fatalf("the slow client got all %d frames: it was never slow", len(frames))
	}
	deadline := time.Now().Add(30 * time.Second)
	for col.count() < 4*ticks && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := col.count(); n != 4*ticks {
		t.Fatalf("the reading client got %d frames, want %d (err %v)", n, 4*ticks, col.err)
	}
}

func TestAConnectionHoldsAtMost200StreamsAndRefusesMoreWith1101(t *testing.T) {
	symbols := fakeSymbols{}
	var names []string
	for i := 0; i < 20; i++ {
		sym := fmt.Sprintf("SYM%02d", i)
		symbols[sym] = 2
		for _, kind := range []string{"tick", "bookTicker", "ticker", "depth", "kline_1m", "kline_5m", "kline_15m",
			"kline_30m", "kline_1h", "kline_2h", "kline_4h", "kline_1d"} {
			names = append(names, sym+"@"+kind)
		}
	}
	ts := startServer(t, Config{}, Deps{Symbols: symbols})
	c := ts.dial(t, "/ws")
	subscribe := func(id int, list []string) map[string]json.RawMessage {
		params, _ := json.Marshal(list)
		c.send(fmt.Sprintf(`{"method":"SUBSCRIBE","params":%s,"id":%d}`, params, id))
		return c.next()
	}
	if m := subscribe(1, names[:201]); string(m["code"]) != "-1101" || string(m["id"]) != "1" {
		t.Fatalf("201 in one SUBSCRIBE: %v", m)
	}
	if got := c.synced(); len(got) != 0 {
		t.Fatalf("a refused SUBSCRIBE subscribed %d streams", len(got))
	}
	if m := subscribe(2, names[:150]); string(m["result"]) != "null" {
		t.Fatalf("150: %v", m)
	}
	// Already-held names do not count twice: 50 new ones fit exactly.
	if m := subscribe(3, names[100:200]); string(m["result"]) != "null" {
		t.Fatalf("up to 200: %v", m)
	}
	if m := subscribe(4, names[199:201]); string(m["code"]) != "-1101" {
		t.Fatalf("the 201st: %v", m)
	}
	if got := c.synced(); len(got) != 200 || got[199] != names[199] {
		t.Fatalf("subscribed %d streams, want 200 in order", len(got))
	}
}
