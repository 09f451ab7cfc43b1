package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/wstest"
)

// Stream settings of the stream tests' service: a listen key lapses in seconds (the tests
// that need a longer one keep it alive, as clients do), a user stream re-reads its key's
// scope twice a second, a small send queue makes a slow client overflow quickly, and @depth
// delivers on ETHUSD only.
const (
	testListenKeyLifetime = 6 * time.Second
	depthSymbol           = "ETHUSD"
)

// startStreamsEnv starts a whole service with the stream settings above.
func startStreamsEnv(t testing.TB, quoted ...string) *env {
	t.Helper()
	vars := apptest.Vars(t)
	vars["TRADESVC_LISTEN_KEY_LIFETIME"] = testListenKeyLifetime.String()
	vars["TRADESVC_USER_STREAM_RECHECK"] = "500ms"
	vars["TRADESVC_WS_SEND_QUEUE"] = "32"
	vars["TRADESVC_WS_WRITE_TIMEOUT"] = "30s"
	vars["TRADESVC_WS_DEPTH_SYMBOLS"] = depthSymbol
	return envOn(t, apptest.Serve(t, apptest.Launch(t, vars)), quoted...)
}

// wsDialer dials the service over TLS (trusting its CA) from source with receive buffer
// rcvBuf: see wstest.Dialer.
func (e *env) wsDialer(source string, rcvBuf int) *websocket.Dialer {
	return wstest.Dialer(e.svc.TLS, source, rcvBuf, 10*time.Second)
}

func (e *env) wsURL(path string) string {
	return "wss://" + strings.TrimPrefix(e.svc.BaseURL, "https://") + path
}

// wsClient is a WebSocket client of the tests. It keeps to the inbound message rate (at most
// 10 a second; it sends at most 9) as a careful client does.
type wsClient struct {
	t     testing.TB
	ws    *websocket.Conn
	sends []time.Time // the latest sends, oldest first
}

// ws connects to path (any source address).
func (e *env) ws(t testing.TB, path string) *wsClient {
	t.Helper()
	return e.wsWith(t, e.wsDialer("", 0), path)
}

func (e *env) wsWith(t testing.TB, d *websocket.Dialer, path string) *wsClient {
	t.Helper()
	conn, res, err := d.Dial(e.wsURL(path), nil)
	if err != nil {
		status := 0
		if res != nil {
			status = res.StatusCode
		}
		t.Fatalf("dial %s: %v (HTTP %d)", path, err, status)
	}
	t.Cleanup(func() { conn.Close() })
	return &wsClient{t: t, ws: conn}
}

// wsRefused dials path, expects the upgrade to be refused, and returns the HTTP status and the
// envelope's code.
func (e *env) wsRefused(t testing.TB, d *websocket.Dialer, path string) (int, int) {
	t.Helper()
	return wstest.Refused(t, d, e.wsURL(path))
}

func (c *wsClient) send(frame string) {
	c.t.Helper()
	if len(c.sends) == 9 {
		if wait := time.Second - time.Since(c.sends[0]); wait > 0 {
			time.Sleep(wait + 10*time.Millisecond)
		}
		c.sends = c.sends[1:]
	}
	c.sends = append(c.sends, time.Now())
	if err := c.ws.WriteMessage(websocket.TextMessage, []byte(frame)); err != nil {
		c.t.Fatalf("send %s: %v", frame, err)
	}
}

// next reads one frame (within timeout) as raw fields.
func (c *wsClient) next(timeout time.Duration) map[string]json.RawMessage {
	c.t.Helper()
	_ = c.ws.SetReadDeadline(time.Now().Add(timeout))
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return c.object(data)
}

// object decodes a frame: a JSON object, compact as every frame the service sends (user-stream
// frames included: they come back from the change feed as the projection wrote them).
func (c *wsClient) object(data []byte) map[string]json.RawMessage {
	c.t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("frame %s is not a JSON object", data)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil || !bytes.Equal(compact.Bytes(), data) {
		c.t.Fatalf("frame %s is not compact JSON", data)
	}
	return m
}

// await reads frames until one satisfies match (market data keeps flowing around replies)
// and returns it; it fails after timeout.
func (c *wsClient) await(timeout time.Duration, what string, match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		_ = c.ws.SetReadDeadline(deadline)
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			c.t.Fatalf("waiting for %s: %v", what, err)
		}
		if m := c.object(data); match(m) {
			return m
		}
	}
}

// reply sends a control frame and returns the reply carrying id (idJSON: "7", or "null").
func (c *wsClient) reply(frame, idJSON string) map[string]json.RawMessage {
	c.t.Helper()
	c.send(frame)
	return c.await(10*time.Second, "the reply with id "+idJSON, func(m map[string]json.RawMessage) bool {
		id, ok := m["id"]
		return ok && string(id) == idJSON
	})
}

// closed reads until the server's close frame and returns its code and reason with the
// frames that came before it.
func (c *wsClient) closed(within time.Duration) (int, string, [][]byte) {
	c.t.Helper()
	return wstest.Closed(c.t, c.ws, within)
}

// wantControlError checks an error reply: code, a message, and the id (a number or null).
func wantControlError(t testing.TB, m map[string]json.RawMessage, code int, idJSON string) {
	t.Helper()
	var msg string
	if string(m["code"]) != itoa(int64(code)) || string(m["id"]) != idJSON || json.Unmarshal(m["msg"], &msg) != nil || msg == "" {
		t.Errorf("reply %v, want code %d id %s and a msg", m, code, idJSON)
	}
	if len(m) != 3 {
		t.Errorf("error reply has fields %s, want code, msg, id", keysOf(m))
	}
}

// listenKeys sends the listen-key endpoints with a key (USER_STREAM: key header, no signature).
type listenKeys struct {
	t testing.TB
	c *gwclient.Client
}

func (e *env) listenKeys(t testing.TB, k apptest.Key) *listenKeys {
	return &listenKeys{t: t, c: e.client(k)}
}

func (l *listenKeys) call(method string, params url.Values) *gwclient.Response {
	l.t.Helper()
	res, err := l.c.Keyed(context.Background(), method, "/v1/listenKey", params)
	return check(l.t, res, err)
}

// create opens (or returns) the key's listen key.
func (l *listenKeys) create() string {
	l.t.Helper()
	res := l.call(http.MethodPost, nil)
	wantOK(l.t, res)
	var body struct {
		ListenKey string `json:"listenKey"`
	}
	decode(l.t, res, &body)
	return body.ListenKey
}

// userStream opens the key's listen key and its stream, keeps the listen key alive (PUT every
// third of its lifetime, as clients do) until the test ends, and waits until the stream is
// established.
func (e *env) userStream(t testing.TB, k apptest.Key) (*wsClient, string) {
	t.Helper()
	lk := e.listenKeys(t, k)
	key := lk.create()
	c := e.ws(t, "/ws/"+key)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(testListenKeyLifetime / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				res, err := lk.c.Keyed(context.Background(), http.MethodPut, "/v1/listenKey", url.Values{"listenKey": {key}})
				if err != nil || res.Status != http.StatusOK {
					return // the test closed or deleted it
				}
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return c, key
}

// event reads user-stream frames until one of kind e for login arrives that match accepts.
func (c *wsClient) event(kind string, login int64, match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	c.t.Helper()
	return c.await(20*time.Second, kind+" of "+itoa(login), func(m map[string]json.RawMessage) bool {
		return str(m, "e") == kind && num(m, "L") == login && (match == nil || match(m))
	})
}
