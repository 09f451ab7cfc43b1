package gateway_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"tradesvc/gateway"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwtest"
)

// One test per error code the gateway produces.

func TestUnknownPathIs404WithCode1020(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	expectErr(t, must(t)(c.Public(bg, "GET", "/v1/nope", nil)), 404, -1020)
	expectErr(t, must(t)(c.Public(bg, "GET", "/V1/PING", nil)), 404, -1020) // paths are case-sensitive
	expectErr(t, must(t)(c.Public(bg, "GET", "/", nil)), 404, -1020)
}

func TestWrongMethodIs405WithCode1020(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	expectErr(t, must(t)(c.Public(bg, "POST", "/v1/ping", nil)), 405, -1020)
	expectErr(t, must(t)(c.Public(bg, "DELETE", "/v1/ticker/price", nil)), 405, -1020)
}

// The server answers 413 as soon as it has read the headers, and closes the connection: a
// client still writing the body may see its write fail (broken pipe, reset) instead of the
// answer, the race of every early HTTP/1.1 answer. Such a transport error is tried again; an
// answer must be the 413.
func TestBodyTooLargeIs413(t *testing.T) {
	_, c := start(t, gateway.Config{BodyLimit: 1024}, nil)
	for attempt := 1; ; attempt++ {
		r, err := c.Raw(bg, "POST", "/v1/ping", "", "a="+strings.Repeat("x", 4096), false)
		if err != nil {
			if attempt < 5 && (strings.Contains(err.Error(), "broken pipe") || strings.Contains(err.Error(), "connection reset")) {
				continue
			}
			t.Fatalf("attempt %d: %v", attempt, err)
		}
		expectErr(t, r, 413, -1101)
		return
	}
}

func TestPanicIsRecoveredAs1001(t *testing.T) {
	_, c := start(t, gateway.Config{}, func(s *gateway.Server) {
		s.Handle(gateway.Endpoint{Method: "GET", Path: "/v1/test/panic"}, func(*fiber.Ctx, *gateway.Request) error {
			panic("boom")
		})
	})
	expectErr(t, must(t)(c.Public(bg, "GET", "/v1/test/panic", nil)), 500, -1001)
	// the server keeps serving
	expectOK(t, must(t)(c.Public(bg, "GET", "/v1/ping", nil)))
}

func TestRetiredEndpointIs410With1016(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	for _, p := range gateway.DefaultRetiredPaths() {
		expectErr(t, must(t)(c.Public(bg, "GET", p, nil)), 410, -1016)
		expectErr(t, must(t)(c.Public(bg, "POST", p, nil)), 410, -1016)
	}
}

func TestIllegalCharactersIs1100(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	for _, q := range []string{"symbol=%ZZ", "symbol=EUR%01USD", "sym%20bol=EURUSD", "symbol=%", "symbol=%C3%28"} {
		expectErr(t, must(t)(c.Raw(bg, "GET", "/v1/ticker/price", q, "", true)), 400, -1100)
	}
}

func TestTooManyParametersIs1101(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	var q []string
	for i := 0; i < 33; i++ {
		q = append(q, "p"+strconv.Itoa(i)+"=1")
	}
	expectErr(t, must(t)(c.Raw(bg, "GET", "/v1/ticker/price", strings.Join(q, "&"), "", true)), 400, -1101)
	expectErr(t, must(t)(c.Raw(bg, "GET", "/v1/ticker/price", "symbol=EURUSD&symbol=XAUUSD", "", true)), 400, -1101)
}

func TestMandatoryParameterIs1102(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/klines", vals("symbol", "EURUSD"))), 400, -1102)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/klines", vals("symbol", "", "interval", "1m"))), 400, -1102)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/ticks", nil)), 400, -1102)
	// signed endpoint: no login; no timestamp; no signature
	expectErr(t, must(t)(c.Signed(bg, "GET", "/v1/account", nil, gwclient.InQuery)), 400, -1102)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/account", vals("login", "1001"))), 400, -1102)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/account", vals("login", "1001", "timestamp", "1"))), 400, -1102)
}

func TestInvalidIntervalIs1120(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	for _, iv := range []string{"1w", "1M", "3m", "1H"} {
		expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/klines", vals("symbol", "EURUSD", "interval", iv))), 400, -1120)
	}
}

func TestInvalidSymbolIs1121(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	for _, path := range []string{"/v1/ticker/price", "/v1/ticker/bookTicker", "/v1/ticker/24hr", "/v1/ticks", "/v1/exchangeInfo"} {
		expectErr(t, must(t)(c.Keyed(bg, "GET", path, vals("symbol", "eurusd"))), 400, -1121)
	}
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/klines", vals("symbol", "EURUSd", "interval", "1m"))), 400, -1121)
	expectErr(t, must(t)(c.Public(bg, "GET", "/v1/exchangeInfo", vals("symbols", `["EURUSD","NOPE"]`))), 400, -1121)
}

func TestInvalidLoginIs1122(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	for _, l := range []string{"abc", "1.5", "99999999999999999999"} {
		expectErr(t, must(t)(c.Signed(bg, "GET", "/v1/account", vals("login", l), gwclient.InQuery)), 400, -1122)
	}
}

func TestBadCombinationIs1128(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/klines", vals("symbol", "EURUSD", "interval", "1m", "startTime", "2000", "endTime", "1000"))), 400, -1128)
	expectErr(t, must(t)(c.Public(bg, "GET", "/v1/exchangeInfo", vals("symbol", "EURUSD", "symbols", `["EURUSD"]`))), 400, -1128)
}

func TestInvalidDataIs1130(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	kl := func(kv ...string) *gwclient.Response {
		return must(t)(c.Keyed(bg, "GET", "/v1/klines", vals(append([]string{"symbol", "EURUSD", "interval", "1m"}, kv...)...)))
	}
	expectErr(t, kl("limit", "0"), 400, -1130)
	expectErr(t, kl("limit", "1001"), 400, -1130)
	expectErr(t, kl("limit", "x"), 400, -1130)
	expectErr(t, kl("startTime", "yesterday"), 400, -1130)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/ticks", vals("symbol", "EURUSD", "limit", "0"))), 400, -1130)
	expectErr(t, must(t)(c.Public(bg, "GET", "/v1/exchangeInfo", vals("symbols", "EURUSD"))), 400, -1130)
	expectErr(t, must(t)(c.Public(bg, "GET", "/v1/exchangeInfo", vals("symbols", "[]"))), 400, -1130)
	// signed: timestamp not an integer; recvWindow malformed or out of range
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/account", vals("login", "1001", "timestamp", "12.5", "signature", "x"))), 400, -1130)
	for _, w := range []string{"0", "60001", "-5", "5s"} {
		r := must(t)(c.Raw(bg, "GET", "/v1/account", "login=1001&recvWindow="+w+"&timestamp=1&signature=00", "", true))
		expectErr(t, r, 400, -1130)
	}
	c2 := *c
	c2.RecvWindow = 60000
	expectOK(t, must(t)(c2.Signed(bg, "GET", "/v1/account", vals("login", "1001"), gwclient.InQuery)))
}

func TestMissingOrMalformedKeyHeaderIs1002(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	expectErr(t, must(t)(c.Public(bg, "GET", "/v1/ticker/price", nil)), 401, -1002)
	expectErr(t, must(t)(c.Public(bg, "GET", "/v1/account", vals("login", "1001"))), 401, -1002)
	bad := *c
	bad.APIKey = "has space"
	expectErr(t, must(t)(bad.Keyed(bg, "GET", "/v1/ticker/price", nil)), 401, -1002)
	bad.APIKey = strings.Repeat("k", 300)
	expectErr(t, must(t)(bad.Keyed(bg, "GET", "/v1/ticker/price", nil)), 401, -1002)
}

func TestRejectedKeyIs2015(t *testing.T) {
	var calls int
	e, c := start(t, gateway.Config{}, tradeEndpoint(&calls))
	unknown := *c
	unknown.APIKey = "no-such-key"
	expectErr(t, must(t)(unknown.Keyed(bg, "GET", "/v1/ticker/price", nil)), 401, -2015)
	// exchangeInfo honours the key header, so an unknown key is refused there too
	expectErr(t, must(t)(unknown.Keyed(bg, "GET", "/v1/exchangeInfo", nil)), 401, -2015)

	e.Keys.Put(gateway.Key{ID: "rev", APIKey: "revoked-key", Secret: []byte("s"), Logins: []int64{1001}, Revoked: true})
	rev := *c
	rev.APIKey, rev.Secret = "revoked-key", []byte("s")
	expectErr(t, must(t)(rev.Signed(bg, "GET", "/v1/account", vals("login", "1001"), gwclient.InQuery)), 401, -2015)

	e.Keys.Put(gateway.Key{ID: "cidr", APIKey: "cidr-key", Secret: []byte("s"), Logins: []int64{1001},
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	cidr := rev
	cidr.APIKey = "cidr-key"
	expectErr(t, must(t)(cidr.Keyed(bg, "GET", "/v1/ticker/price", nil)), 401, -2015)
	e.Keys.Put(gateway.Key{ID: "cidr2", APIKey: "cidr-key-ok", Secret: []byte("s"), Logins: []int64{1001},
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}})
	cidr.APIKey = "cidr-key-ok"
	expectOK(t, must(t)(cidr.Keyed(bg, "GET", "/v1/ticker/price", nil)))

	ro := *c
	ro.APIKey = gwtest.ReadOnlyKey
	expectErr(t, must(t)(ro.Signed(bg, "POST", "/v1/test/trade", vals("login", "1001"), gwclient.InBody)), 401, -2015)
	expectOK(t, must(t)(ro.Signed(bg, "GET", "/v1/account", vals("login", "1001"), gwclient.InQuery))) // reads are fine
	if calls != 0 {
		t.Fatalf("handler ran %d times", calls)
	}
}

func TestBadSignatureIs1022(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	wrong := *c
	wrong.Secret = []byte("not-the-secret")
	r := must(t)(wrong.Signed(bg, "GET", "/v1/account", vals("login", "1001"), gwclient.InQuery))
	expectErr(t, r, 401, -1022)
	if r.Header.Get(gateway.HeaderUsedWeight1m) != "0" {
		t.Fatalf("an unauthenticated request consumed the key's weight: %v", r.Header)
	}
	// a valid signature over different parameters
	q, _ := gwclient.SignParams([]byte(gwtest.Secret), vals("login", "1001"), gwclient.InQuery, time.Now().UnixMilli(), 0)
	tampered := strings.Replace(q, "login=1001", "login=1002", 1)
	expectErr(t, must(t)(c.Raw(bg, "GET", "/v1/account", tampered, "", true)), 401, -1022)
	// not hex / wrong length
	for _, sig := range []string{"zz", strings.Repeat("g", 64), strings.Repeat("0", 63)} {
		raw := "login=1001&timestamp=" + strconv.FormatInt(time.Now().UnixMilli(), 10) + "&signature=" + sig
		expectErr(t, must(t)(c.Raw(bg, "GET", "/v1/account", raw, "", true)), 401, -1022)
	}
}

func TestTimestampOutsideRecvWindowIs1021(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	now := time.UnixMilli(1_800_000_000_000)
	e.Clock.Set(now)
	at := func(ts time.Time, window int64) *gwclient.Response {
		cl := *c
		cl.Now = func() time.Time { return ts }
		cl.RecvWindow = window
		return must(t)(cl.Signed(bg, "GET", "/v1/account", vals("login", "1001"), gwclient.InQuery))
	}
	expectErr(t, at(now.Add(1000*time.Millisecond), 0), 400, -1021) // lead must be < 1000 ms
	expectOK(t, at(now.Add(999*time.Millisecond), 0))
	expectErr(t, at(now.Add(-5001*time.Millisecond), 0), 400, -1021) // default window 5000
	expectOK(t, at(now.Add(-5000*time.Millisecond), 0))
	expectOK(t, at(now.Add(-60000*time.Millisecond), 60000))
	expectErr(t, at(now.Add(-11*time.Millisecond), 10), 400, -1021)
}

func TestLoginOutOfScopeIs2022(t *testing.T) {
	var calls int
	_, c := start(t, gateway.Config{}, tradeEndpoint(&calls))
	// another key's login, and a login in scope that has no (active) account
	expectErr(t, must(t)(c.Signed(bg, "GET", "/v1/account", vals("login", "2001"), gwclient.InQuery)), 400, -2022)
	expectErr(t, must(t)(c.Signed(bg, "GET", "/v1/account", vals("login", "1009"), gwclient.InQuery)), 400, -2022)
	expectErr(t, must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "1009"), gwclient.InBody)), 400, -2022)
	expectErr(t, must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "2001"), gwclient.InBody)), 400, -2022)
	if calls != 0 {
		t.Fatalf("handler ran %d times", calls)
	}
}

func TestAccountTradingDisabledIs2024OnTradeOnly(t *testing.T) {
	var calls int
	_, c := start(t, gateway.Config{}, tradeEndpoint(&calls))
	expectErr(t, must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "1003"), gwclient.InBody)), 400, -2024)
	r := must(t)(c.Signed(bg, "GET", "/v1/account", vals("login", "1003"), gwclient.InQuery))
	expectOK(t, r)
	if acct := decode[map[string]any](t, r); acct["tradeAllowed"] != false {
		t.Fatalf("tradeAllowed = %v", acct["tradeAllowed"])
	}
}

func TestTradingOffIs1017AndExecutorDownIs5015BeforeCharging(t *testing.T) {
	var calls int
	e, c := start(t, gateway.Config{}, tradeEndpoint(&calls))
	e.Switches.TradingOff.Store(true)
	r := must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "1001"), gwclient.InBody))
	expectErr(t, r, 503, -1017)
	if r.Header.Get(gateway.HeaderOrderCount10s) != "0" {
		t.Fatalf("orders charged: %v", r.Header)
	}
	// reads stay up
	expectOK(t, must(t)(c.Signed(bg, "GET", "/v1/account", vals("login", "1001"), gwclient.InQuery)))
	e.Switches.TradingOff.Store(false)
	e.Switches.ExecutorOff.Store(true)
	r = must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "1001"), gwclient.InBody))
	expectErr(t, r, 503, -5015)
	if r.Header.Get(gateway.HeaderOrderCount10s) != "0" || r.Header.Get(gateway.HeaderOrderCount1m) != "0" {
		t.Fatalf("orders charged: %v", r.Header)
	}
	e.Switches.ExecutorOff.Store(false)
	r = must(t)(c.Signed(bg, "POST", "/v1/test/trade", vals("login", "1001"), gwclient.InBody))
	expectOK(t, r)
	if r.Header.Get(gateway.HeaderOrderCount10s) != "1" || r.Header.Get(gateway.HeaderOrderCount1m) != "1" || calls != 1 {
		t.Fatalf("orders not charged once: %v calls=%d", r.Header, calls)
	}
}

func TestKeyStoreDownIs1000(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	e.Keys.Fail(gwtest.ErrDown)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/price", nil)), 503, -1000)
}

// A read whose store cannot answer did nothing: -1000 (503, retry with backoff), not an
// internal error.
func TestAccountReadFailureIs1000(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	e.Accounts.Fail(gwtest.ErrDown)
	expectErr(t, must(t)(c.Signed(bg, "GET", "/v1/account", vals("login", "1001"), gwclient.InQuery)), 503, -1000)
}

// An order's account is checked before anything of it is done: a store that cannot answer is
// -1000 (503: nothing was done, retry with backoff), as for the key and the rate limits, not
// an internal error.
func TestOrdersAccountStoreDownIs1000(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	e.Accounts.Fail(gwtest.ErrDown)
	expectErr(t, must(t)(c.Signed(bg, "POST", "/v1/order", vals("login", "1001", "symbol", "EURUSD", "side", "BUY",
		"type", "MARKET", "volume", "0.1"), gwclient.InBody)), 503, -1000)
}

func TestNoQuoteYetIs5003(t *testing.T) {
	e, c := start(t, gateway.Config{}, nil)
	s := gwtest.EURUSD()
	s.Symbol = "GBPUSD"
	e.Market.AddSymbol(s)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/price", vals("symbol", "GBPUSD"))), 400, -5003)
	expectErr(t, must(t)(c.Keyed(bg, "GET", "/v1/ticker/24hr", vals("symbol", "GBPUSD"))), 400, -5003)
	// ticks of a known symbol that is not streamed: empty array
	r := must(t)(c.Keyed(bg, "GET", "/v1/ticks", vals("symbol", "GBPUSD")))
	expectOK(t, r)
	if string(r.Body) != "[]" {
		t.Fatalf("body %s", r.Body)
	}
}

func TestPlainHTTPIsRefusedWith400(t *testing.T) {
	e, _ := start(t, gateway.Config{}, nil)
	addr := strings.TrimPrefix(e.BaseURL, "https://")
	res, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + addr + "/v1/ping")
	if err != nil {
		t.Fatalf("plain HTTP: %v", err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 400 || !strings.Contains(string(body), `"code":-1020`) {
		t.Fatalf("plain HTTP got %d %s", res.StatusCode, body)
	}
}

func TestSilentClientIsDropped(t *testing.T) {
	e, _ := start(t, gateway.Config{ReadTimeout: 200 * time.Millisecond}, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.BaseURL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = bufio.NewReader(conn).ReadByte()
	if err == nil {
		t.Fatal("server sent data to a silent client")
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("server held a silent connection open for 10 s")
	}
}

func TestUsageHeaderNamesAreSentAsSpelled(t *testing.T) {
	e, _ := start(t, gateway.Config{}, nil)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CA)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(e.BaseURL, "https://"), &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("GET /v1/ping HTTP/1.1\r\nHost: x\r\nx-svc-apikey: " + gwtest.APIKey + "\r\nConnection: close\r\n\r\n"))
	raw, _ := io.ReadAll(conn)
	for _, h := range []string{"\r\nX-SVC-USED-WEIGHT-1M: 1\r\n", "\r\nX-SVC-ORDER-COUNT-10S: 0\r\n", "\r\nX-SVC-ORDER-COUNT-1M: 0\r\n"} {
		if !strings.Contains(string(raw), h) {
			t.Fatalf("response lacks %q:\n%s", h, raw)
		}
	}
}

func TestLongQueryStringIsAccepted(t *testing.T) {
	_, c := start(t, gateway.Config{}, echoEndpoint)
	long := strings.Repeat("x", 10_000)
	r := must(t)(c.Signed(bg, "GET", "/v1/test/echo", vals("a", long), gwclient.InQuery))
	expectOK(t, r)
}

func TestMalformedHTTPIs400WithEnvelope(t *testing.T) {
	e, _ := start(t, gateway.Config{}, nil)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CA)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(e.BaseURL, "https://"), &tls.Config{RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = conn.Write([]byte("GET /v1/ping HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 400 || !strings.Contains(string(body), `"code":-1020`) {
		t.Fatalf("got %d %s", res.StatusCode, body)
	}
}
