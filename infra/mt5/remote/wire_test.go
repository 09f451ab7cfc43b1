package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

const testToken = "test-token-0123456789"

// startFake serves a fakePort over a real loopback listener and returns a client for it.
func startFake(t *testing.T, f *fakePort, cfg ClientConfig) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(NewServer(ServerConfig{Port: f, Token: testToken}))
	t.Cleanup(srv.Close)
	cfg.Addr = srv.URL
	if cfg.Token == "" {
		cfg.Token = testToken
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, srv
}

func TestAuthRefusedWithoutRightToken(t *testing.T) {
	f := newFakePort()
	_, srv := startFake(t, f, ClientConfig{})
	for name, hdr := range map[string]string{
		"missing":      "",
		"wrong token":  "Bearer nope",
		"wrong scheme": "Basic " + testToken,
		"token prefix": "Bearer " + testToken[:5],
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/port/serverInfo", strings.NewReader("{}"))
		if hdr != "" {
			req.Header.Set("Authorization", hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, resp.StatusCode)
		}
		var we wireError
		if err := json.Unmarshal(body, &we); err != nil || we.Error != codeUnauthorized {
			t.Errorf("%s: body %q is not a JSON unauthorized error (%v)", name, body, err)
		}
	}
	// Unauthenticated requests to unknown paths are refused the same way (no path probing).
	resp, err := http.Post(srv.URL+"/nope", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unknown path without token: status %d, want 401", resp.StatusCode)
	}

	bad, err := NewClient(ClientConfig{Addr: srv.URL, Token: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.ServerInfo(context.Background()); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("client with wrong token: err %v, want ErrUnauthorized", err)
	}
	good, err := NewClient(ClientConfig{Addr: strings.TrimPrefix(srv.URL, "http://"), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := good.ServerInfo(context.Background()); err != nil || info.Name != "fake" {
		t.Fatalf("client with right token and bare host:port: %+v, %v", info, err)
	}
}

func TestPortSentinelsCrossTheWire(t *testing.T) {
	f := newFakePort()
	c, _ := startFake(t, f, ClientConfig{})
	all := []error{mt5.ErrNoAnswer, mt5.ErrTimeout, mt5.ErrDisconnected, mt5.ErrUnknownLogin,
		mt5.ErrUnknownSymbol, mt5.ErrNoQuote, mt5.ErrClosed, mt5.ErrCursorAhead}
	ctx := context.Background()
	calls := map[string]func() error{
		"Account":  func() error { _, err := c.Account(ctx, 42); return err },
		"DayStats": func() error { _, err := c.DayStats(ctx, "EURUSD"); return err },
		"Quote":    func() error { _, err := c.Quote(ctx, "EURUSD"); return err },
		"Orders":   func() error { _, err := c.OrdersByTag(ctx, 42, "abc"); return err },
		"Facts":    func() error { _, err := c.Facts(ctx, 0, 10); return err },
		"Send": func() error {
			_, err := c.Send(ctx, mt5.TradeRequest{Login: 42})
			return err
		},
	}
	for _, sentinel := range all {
		// The server side wraps the sentinel, as real code does.
		wrapped := fmt.Errorf("sim: login 42: %w", sentinel)
		f.setErr(wrapped)
		func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.sendFn = func(context.Context, mt5.TradeRequest) (mt5.TradeResult, error) { return mt5.TradeResult{}, wrapped }
		}()
		for name, call := range calls {
			err := call()
			if !errors.Is(err, sentinel) {
				t.Errorf("%s with %v: got %v, want errors.Is the sentinel", name, sentinel, err)
				continue
			}
			for _, other := range all {
				if other != sentinel && errors.Is(err, other) {
					t.Errorf("%s with %v: also errors.Is %v", name, sentinel, other)
				}
			}
			if !strings.Contains(err.Error(), "login 42") {
				t.Errorf("%s: message %q lost the server's text", name, err)
			}
		}
	}
	// An error outside the port's vocabulary still arrives as an error, not a sentinel.
	f.setErr(errors.New("disk on fire"))
	_, err := c.Account(ctx, 1)
	var re *RemoteError
	if !errors.As(err, &re) || re.Code != codeInternal || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("unclassified error: %v", err)
	}
	for _, s := range all {
		if errors.Is(err, s) {
			t.Fatalf("unclassified error matches %v", s)
		}
	}
}

// decimals that must survive the wire exactly: coefficient, exponent and sign.
var exactDecimals = []string{"1.10000", "0.00001", "-0.5", "0", "0.000", "-0", "1E+3", "100",
	"123456789012345678901234567890.123456", "0.1", "99999.99999"}

func sameDecimal(a, b apd.Decimal) bool {
	return a.Cmp(&b) == 0 && a.Exponent == b.Exponent && a.Negative == b.Negative && a.Form == b.Form
}

func TestDecimalsSurviveExactly(t *testing.T) {
	f := newFakePort()
	c, _ := startFake(t, f, ClientConfig{})
	for _, s := range exactDecimals {
		var d apd.Decimal
		if _, _, err := d.SetString(s); err != nil {
			t.Fatal(err)
		}
		var seen mt5.TradeRequest
		f.mu.Lock()
		f.sendFn = func(_ context.Context, req mt5.TradeRequest) (mt5.TradeResult, error) {
			seen = req
			return mt5.TradeResult{Retcode: trading.RetDone, Price: req.Price, Volume: req.Volume,
				Bid: req.SL, Ask: req.TP, Deals: []int64{1<<62 + 7}}, nil
		}
		f.mu.Unlock()
		fp := trading.FillIOC
		res, err := c.Send(context.Background(), mt5.TradeRequest{Login: 1, Price: d, Volume: d, SL: d, TP: d,
			StopLimit: d, Filling: &fp, Comment: "x#ABCDEFG"})
		if err != nil {
			t.Fatal(err)
		}
		for name, got := range map[string]apd.Decimal{"req.Price": seen.Price, "req.StopLimit": seen.StopLimit,
			"res.Price": res.Price, "res.Volume": res.Volume, "res.Bid": res.Bid, "res.Ask": res.Ask} {
			if !sameDecimal(got, d) {
				t.Errorf("%s: sent %s, got %s (exp %d vs %d)", name, s, got.String(), got.Exponent, d.Exponent)
			}
		}
		if seen.Filling == nil || *seen.Filling != trading.FillIOC || seen.Comment != "x#ABCDEFG" {
			t.Errorf("request fields lost: %+v", seen)
		}
		if res.Retcode != trading.RetDone || len(res.Deals) != 1 || res.Deals[0] != 1<<62+7 {
			t.Errorf("result fields lost: %+v", res)
		}
	}
	// Decimals travel as JSON strings, never numbers.
	b, err := json.Marshal(&mt5.TradeResult{Price: dec.MustParse("1.10000")})
	if err != nil || !strings.Contains(string(b), `"Price":"1.10000"`) {
		t.Fatalf("wire form %s (%v)", b, err)
	}
}

func TestFactPayloadDecimalsSurvive(t *testing.T) {
	f := newFakePort()
	c, _ := startFake(t, f, ClientConfig{})
	f.addFact(mt5.Fact{Kind: mt5.FactDeal, Login: 7, Deal: &mt5.Deal{Ticket: 9, Profit: dec.MustParse("-12.34"), Volume: dec.MustParse("0.10")}})
	f.addFact(mt5.Fact{Kind: mt5.FactAccount, Login: 7, Account: &mt5.Account{Login: 7, Balance: dec.MustParse("10000.00")}})
	facts, err := c.Facts(context.Background(), 0, 10)
	if err != nil || len(facts) != 2 {
		t.Fatalf("facts %v, %v", facts, err)
	}
	if facts[0].Deal == nil || facts[0].Account != nil || !sameDecimal(facts[0].Deal.Profit, dec.MustParse("-12.34")) ||
		!sameDecimal(facts[0].Deal.Volume, dec.MustParse("0.10")) {
		t.Errorf("deal fact: %+v", facts[0].Deal)
	}
	if facts[1].Account == nil || facts[1].Deal != nil || !sameDecimal(facts[1].Account.Balance, dec.MustParse("10000.00")) {
		t.Errorf("account fact: %+v", facts[1].Account)
	}
}

func TestLongPollResumesFromCursorAcrossReconnect(t *testing.T) {
	f := newFakePort()
	h := NewServer(ServerConfig{Port: f, Token: testToken})
	srv := httptest.NewServer(h)
	addr := srv.Listener.Addr().String()
	newClient := func() *Client {
		c, err := NewClient(ClientConfig{Addr: addr, Token: testToken, PollWait: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c1 := newClient()
	for i := 0; i < 3; i++ {
		f.addFact(mt5.Fact{Kind: mt5.FactAccount, Login: int64(100 + i), Account: &mt5.Account{Login: int64(100 + i)}})
	}
	got, err := c1.Facts(context.Background(), 0, 2)
	if err != nil || len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 {
		t.Fatalf("first batch: %+v, %v", got, err)
	}
	cursor := got[len(got)-1].Seq

	// A poll that is waiting when facts arrive wakes up with them (several empty polls may
	// pass first: PollWait is short).
	got, err = c1.Facts(context.Background(), cursor, 10)
	if err != nil || len(got) != 1 || got[0].Seq != 3 {
		t.Fatalf("second batch: %+v, %v", got, err)
	}
	cursor = got[0].Seq
	done := make(chan []mt5.Fact, 1)
	go func() {
		fs, _ := c1.Facts(context.Background(), cursor, 10)
		done <- fs
	}()
	waitFor(t, func() bool { return f.pollCount() >= 5 }) // at least one empty poll came back and was renewed
	f.addFact(mt5.Fact{Kind: mt5.FactAccount, Login: 103, Account: &mt5.Account{Login: 103}})
	if fs := <-done; len(fs) != 1 || fs[0].Seq != 4 {
		t.Fatalf("woken poll: %+v", fs)
	}
	cursor = 4

	// The executor dies: its client and every connection go away, and the server process
	// restarts on the same address while the trade server keeps its facts.
	_ = c1.Close()
	srv.CloseClientConnections()
	srv.Close()
	for i := 0; i < 2; i++ {
		f.addFact(mt5.Fact{Kind: mt5.FactAccount, Login: int64(200 + i), Account: &mt5.Account{Login: int64(200 + i)}})
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("relisten on %s: %v", addr, err)
	}
	srv2 := &httptest.Server{Listener: ln, Config: &http.Server{Handler: h}}
	srv2.Start()
	defer srv2.Close()

	c2 := newClient()
	defer c2.Close()
	got, err = c2.Facts(context.Background(), cursor, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != 5 || got[1].Seq != 6 || got[0].Login != 200 {
		t.Fatalf("after reconnect from cursor %d: %+v", cursor, got)
	}
}

func TestLongPollHonorsCallerContext(t *testing.T) {
	f := newFakePort()
	c, _ := startFake(t, f, ClientConfig{PollWait: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	got, err := c.Facts(ctx, 0, 10)
	if !errors.Is(err, context.DeadlineExceeded) || got != nil {
		t.Fatalf("empty feed until deadline: %v, %v", got, err)
	}
	if n := f.pollCount(); n < 2 {
		t.Fatalf("only %d polls: the client should renew empty polls", n)
	}
	// Ticks: a cancelled context ends the poll promptly.
	ctx2, cancel2 := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Ticks(ctx2, 0, 10); errc <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel2()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("ticks after cancel: %v", err)
	}
}

func TestSendOverDroppedConnectionIsAnError(t *testing.T) {
	// A server that reads the request and drops the connection without answering, like a
	// sim process killed mid-request.
	var hits atomic.Int32
	drop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/port/send" {
			// Answer reads normally so that the Send below goes out on a reused
			// keep-alive connection (the case where a transport may retry on its own).
			writeJSON(w, http.StatusOK, &mt5.ServerInfo{Name: "dropper"})
			return
		}
		hits.Add(1)
		_, _ = io.ReadAll(r.Body)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	defer drop.Close()
	c, err := NewClient(ClientConfig{Addr: drop.URL, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	if info, err := c.ServerInfo(context.Background()); err != nil || info.Name != "dropper" {
		t.Fatalf("warm-up read: %+v, %v", info, err)
	}
	res, err := c.Send(context.Background(), mt5.TradeRequest{Login: 1, Comment: "t#AAAAAAA"})
	if err == nil {
		t.Fatalf("dropped connection answered %+v", res)
	}
	if !errors.Is(err, mt5.ErrNoAnswer) || errors.Is(err, mt5.ErrDisconnected) {
		t.Fatalf("dropped connection: %v, want ErrNoAnswer (outcome unknown)", err)
	}
	if res.Retcode != 0 {
		t.Fatalf("fabricated retcode %v", res.Retcode)
	}
	if hits.Load() != 1 {
		t.Fatalf("the request reached the server %d times; a Send must never be resent", hits.Load())
	}

	// Connection refused: the sim process is down.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	c2, _ := NewClient(ClientConfig{Addr: addr, Token: testToken})
	res, err = c2.Send(context.Background(), mt5.TradeRequest{Login: 1})
	if !errors.Is(err, mt5.ErrNoAnswer) || res.Retcode != 0 {
		t.Fatalf("refused: %+v, %v", res, err)
	}
	// Read calls over a dead peer say ErrDisconnected.
	if _, err := c2.Account(context.Background(), 1); !errors.Is(err, mt5.ErrDisconnected) {
		t.Fatalf("read over refused connection: %v", err)
	}
}

func TestSendTimeoutCancelsServerSide(t *testing.T) {
	f := newFakePort()
	serverSaw := make(chan error, 1)
	f.sendFn = func(ctx context.Context, _ mt5.TradeRequest) (mt5.TradeResult, error) {
		<-ctx.Done()
		serverSaw <- ctx.Err()
		return mt5.TradeResult{}, ctx.Err()
	}
	c, _ := startFake(t, f, ClientConfig{CallTimeout: 200 * time.Millisecond})
	// The client's own call timeout: no answer, outcome unknown.
	res, err := c.Send(context.Background(), mt5.TradeRequest{Login: 1})
	if err == nil || !errors.Is(err, mt5.ErrNoAnswer) || res.Retcode != 0 {
		t.Fatalf("call timeout: %+v, %v", res, err)
	}
	if e := <-serverSaw; e == nil {
		t.Fatal("server-side send was not cancelled")
	}
	// The caller's context: its error comes back.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = c.Send(ctx, mt5.TradeRequest{Login: 1})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller deadline: %v", err)
	}
	<-serverSaw
}

func TestBadRequestBody(t *testing.T) {
	f := newFakePort()
	_, srv := startFake(t, f, ClientConfig{})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/port/account", strings.NewReader(`{"login":"x"`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var we wireError
	_ = json.NewDecoder(resp.Body).Decode(&we)
	if resp.StatusCode != http.StatusBadRequest || we.Error != codeBadRequest {
		t.Fatalf("status %d body %+v", resp.StatusCode, we)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCallsReuseKeepAliveConnections(t *testing.T) {
	f := newFakePort()
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(NewServer(ServerConfig{Port: f, Token: testToken}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := NewClient(ClientConfig{Addr: srv.URL, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 20; i++ {
		if _, err := c.Account(context.Background(), int64(i)); err != nil {
			t.Fatal(err)
		}
	}
	// Error answers must not cost a connection either.
	f.setErr(mt5.ErrUnknownLogin)
	for i := 0; i < 5; i++ {
		if _, err := c.Account(context.Background(), 1); !errors.Is(err, mt5.ErrUnknownLogin) {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("25 sequential calls opened %d connections, want 1", n)
	}
}

func TestShutdownEndsWaitingLongPolls(t *testing.T) {
	f := newFakePort()
	life, stop := context.WithCancel(context.Background())
	srv := httptest.NewServer(NewServer(ServerConfig{Port: f, Token: testToken, Context: life}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{Addr: srv.URL, Token: testToken, PollWait: MaxPollWait})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errc := make(chan error, 1)
	go func() { _, err := c.Facts(context.Background(), 0, 10); errc <- err }()
	waitFor(t, func() bool { return f.pollCount() == 1 })
	stop()
	select {
	case err := <-errc:
		if !errors.Is(err, mt5.ErrClosed) {
			t.Fatalf("poll during shutdown: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a waiting long poll held up the shutdown")
	}
}

func TestAdminEndpointsAbsentWithoutAdmin(t *testing.T) {
	f := newFakePort()
	c, _ := startFake(t, f, ClientConfig{})
	if _, err := c.Admin().Logins(context.Background()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("admin call on a port-only server: %v, want ErrNotFound", err)
	}
}
