package streams

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/fasthttp/websocket"
	"github.com/gofiber/fiber/v2"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/gateway/wstest"
	"tradesvc/infra/leakcheck"
	"tradesvc/query"
)

// TestMain fails the package's tests when they leave a goroutine running.
func TestMain(m *testing.M) { leakcheck.Main(m) }

// fakeSymbols is the symbol read model of the package tests.
type fakeSymbols map[string]int32

func (f fakeSymbols) Symbol(_ context.Context, name string) (trading.SymbolSpec, bool, error) {
	d, ok := f[name]
	return trading.SymbolSpec{SymbolSpecOf: events.SymbolSpecOf[apd.Decimal]{Symbol: name, Digits: d}}, ok, nil
}

var testSymbols = fakeSymbols{"BTCUSD": 2, "EURUSD": 5, "ETHUSD": 2}

// testServer is the streams mounted on a plain-HTTP Fiber app on a loopback port (the
// gateway adds TLS in front; the e2e tests cover that).
type testServer struct {
	srv  *Server
	addr string
}

func startServer(t *testing.T, cfg Config, deps Deps) *testServer {
	t.Helper()
	if deps.Symbols == nil {
		deps.Symbols = testSymbols
	}
	srv, err := New(cfg, deps)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	srv.Mount(app)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- app.Listener(ln) }()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := app.ShutdownWithTimeout(5 * time.Second); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		_ = ln.Close() // a shutdown that raced the listener's start does not stop it
		<-served
	})
	return &testServer{srv: srv, addr: ln.Addr().String()}
}

// dialer connects from a chosen loopback source address (every 127/8 address reaches the
// server), with an optionally tiny receive buffer to make a client slow for real.
func dialer(source string, rcvBuf int) *websocket.Dialer {
	return wstest.Dialer(nil, source, rcvBuf, 5*time.Second)
}

// client is a test WebSocket client.
type client struct {
	t  *testing.T
	ws *websocket.Conn
}

func (ts *testServer) dial(t *testing.T, path string) *client {
	t.Helper()
	return ts.dialWith(t, dialer("", 0), path)
}

func (ts *testServer) dialWith(t *testing.T, d *websocket.Dialer, path string) *client {
	t.Helper()
	ws, res, err := d.Dial("ws://"+ts.addr+path, nil)
	if err != nil {
		t.Fatalf("dial %s: %v (response %v)", path, err, res)
	}
	t.Cleanup(func() { ws.Close() })
	return &client{t: t, ws: ws}
}

// refused dials path and returns the HTTP status and error code of the refusal.
func (ts *testServer) refused(t *testing.T, d *websocket.Dialer, path string) (int, int) {
	t.Helper()
	return wstest.Refused(t, d, "ws://"+ts.addr+path)
}

func (c *client) send(v string) {
	c.t.Helper()
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(v)); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// next reads the next text frame (within 10 s) as raw JSON fields.
func (c *client) next() map[string]json.RawMessage {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("frame %s is not a JSON object", data)
	}
	return m
}

// closed reads until the server's close frame and returns its code and reason; frames
// before it are returned too.
func (c *client) closed(within time.Duration) (code int, reason string, frames [][]byte) {
	c.t.Helper()
	return wstest.Closed(c.t, c.ws, within)
}

// fakeMarket publishes quotes and day statistics as the market projection would.
func tickQuote(symbol, bid string, at int64) query.Quote {
	b := dec.MustParse(bid)
	return query.Quote{Symbol: symbol, Bid: b, Ask: dec.Add(b, dec.MustParse("1")), Last: b, Volume: 3,
		BidDirection: 1, AskDirection: -1, Time: at}
}

// waitOpen waits until the server counts n open connections.
func waitOpen(t *testing.T, srv *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for srv.Open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("open connections = %d, want %d", srv.Open(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// httpGet sends a plain (non-upgrade) request to a stream URL.
func (ts *testServer) httpGet(t *testing.T, path string) (int, []byte) {
	t.Helper()
	res, err := http.Get("http://" + ts.addr + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, body
}

// collector counts frames a client reads in the background.
type collector struct {
	mu     sync.Mutex
	frames [][]byte
	err    error
	done   chan struct{}
}

func collect(ws *websocket.Conn) *collector {
	col := &collector{done: make(chan struct{})}
	go func() {
		defer close(col.done)
		for {
			_, data, err := ws.ReadMessage()
			col.mu.Lock()
			if err != nil {
				col.err = err
				col.mu.Unlock()
				return
			}
			col.frames = append(col.frames, data)
			col.mu.Unlock()
		}
	}()
	return col
}

func (c *collector) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.frames)
}
