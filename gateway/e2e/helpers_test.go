package e2e_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/keys"
)

// Usage header names as the spec spells them (net/http canonicalises on read; Get is
// case-insensitive).
const (
	hdrWeight   = "X-SVC-USED-WEIGHT-1M"
	hdrOrders10 = "X-SVC-ORDER-COUNT-10S"
	hdrOrders1m = "X-SVC-ORDER-COUNT-1M"
)

// Seed logins of the embedded simulator.
const (
	loginReal1   = 1001
	loginReal2   = 1002
	loginDemo    = 1003
	loginCent    = 1004
	loginNoTrade = 1005
	loginFIFO    = 1006
	loginMissing = 9999 // never exists on the trade server
)

// env is one started service shared by the subtests of a top-level test.
type env struct {
	svc    *apptest.Service
	digits map[string]int // symbol → digits, from exchangeInfo
	// main is a key over logins 1001..1005 and the nonexistent 9999, default limits.
	main apptest.Key
}

// startEnv starts the service and waits until reference data, the quotes of the named
// symbols and the seed accounts have come through the pipeline.
func startEnv(t testing.TB, quoted ...string) *env {
	t.Helper()
	return envOn(t, apptest.Start(t), quoted...)
}

// envOn is startEnv on a service already started (with its own configuration).
func envOn(t testing.TB, s *apptest.Service, quoted ...string) *env {
	t.Helper()
	e := &env{svc: s}
	// Wait for every symbol of the trade server, not only the quoted ones: the reference
	// topic's partitions are projected independently, so exchangeInfo can briefly list a part.
	specs, err := s.App.Sim().Symbols(context.Background())
	if err != nil {
		t.Fatalf("simulator symbols: %v", err)
	}
	all := make([]string, 0, len(specs))
	for _, y := range specs {
		all = append(all, y.Name)
	}
	e.digits = s.WaitForSymbols(t, 30*time.Second, all...)
	for _, sym := range quoted {
		s.WaitForQuote(t, 30*time.Second, sym)
	}
	for _, l := range []int64{loginReal1, loginReal2, loginDemo, loginCent, loginNoTrade} {
		s.WaitForAccount(t, 30*time.Second, l)
	}
	e.main = s.CreateKey(t, []int64{loginReal1, loginReal2, loginDemo, loginCent, loginNoTrade, loginMissing}, false, nil)
	return e
}

func (e *env) client(k apptest.Key) *gwclient.Client { return e.svc.Client(k) }

// noKey is the zero key: requests go without the key header.
var noKey apptest.Key

// check fails unless the request succeeded at the transport level, then checks what every
// response of the service must be: JSON (content type and a parseable body).
func check(t testing.TB, res *gwclient.Response, err error) *gwclient.Response {
	t.Helper()
	if err != nil {
		t.Fatalf("request failed: %v", err)
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("status %d: Content-Type %q, want application/json (body %s)", res.Status, ct, res.Body)
	}
	if !json.Valid(res.Body) {
		t.Errorf("status %d: body is not JSON: %q", res.Status, res.Body)
	}
	return res
}

// get sends a GET with the key header (when k has one) and params in the query string.
func get(t testing.TB, c *gwclient.Client, path string, params url.Values) *gwclient.Response {
	t.Helper()
	if c.APIKey == "" {
		res, err := c.Public(context.Background(), http.MethodGet, path, params)
		return check(t, res, err)
	}
	res, err := c.Keyed(context.Background(), http.MethodGet, path, params)
	return check(t, res, err)
}

// signed sends a signed GET with params placed as asked.
func signed(t testing.TB, c *gwclient.Client, path string, params url.Values, pl gwclient.Placement) *gwclient.Response {
	t.Helper()
	res, err := c.Signed(context.Background(), http.MethodGet, path, params, pl)
	return check(t, res, err)
}

// raw sends exactly rawQuery and body (a form body when non-empty) with or without the key.
func raw(t testing.TB, c *gwclient.Client, method, path, rawQuery, body string, withKey bool) *gwclient.Response {
	t.Helper()
	res, err := c.Raw(context.Background(), method, path, rawQuery, body, withKey)
	return check(t, res, err)
}

// wantOK fails unless the response is 200.
func wantOK(t testing.TB, res *gwclient.Response) {
	t.Helper()
	if res.Status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", res.Status, res.Body)
	}
}

// wantErr fails unless the response is the error envelope with exactly this status and code,
// a non-empty msg, and no other field.
func wantErr(t testing.TB, res *gwclient.Response, status, code int) {
	t.Helper()
	if res.Status != status {
		t.Errorf("status %d, want %d: %s", res.Status, status, res.Body)
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(res.Body, &body); err != nil {
		t.Fatalf("error body is not a JSON object: %q", res.Body)
	}
	var got int
	if err := json.Unmarshal(body["code"], &got); err != nil || got != code {
		t.Errorf("code %s, want %d: %s", body["code"], code, res.Body)
	}
	var msg string
	if err := json.Unmarshal(body["msg"], &msg); err != nil || msg == "" {
		t.Errorf("msg missing or not a non-empty string: %s", res.Body)
	}
	for k := range body {
		if k != "code" && k != "msg" {
			t.Errorf("unexpected field %q in error body %s", k, res.Body)
		}
	}
}

// decode unmarshals the body into v or fails.
func decode(t testing.TB, res *gwclient.Response, v any) {
	t.Helper()
	if err := json.Unmarshal(res.Body, v); err != nil {
		t.Fatalf("decode %s: %v", res.Body, err)
	}
}

// noUsageHeaders fails if any usage header is present.
func noUsageHeaders(t testing.TB, res *gwclient.Response) {
	t.Helper()
	for _, h := range []string{hdrWeight, hdrOrders10, hdrOrders1m} {
		if v, ok := res.Header[http.CanonicalHeaderKey(h)]; ok {
			t.Errorf("unexpected usage header %s: %v", h, v)
		}
	}
}

// usedWeight returns X-SVC-USED-WEIGHT-1M and fails unless all three usage headers are
// present as integers.
func usedWeight(t testing.TB, res *gwclient.Response) int {
	t.Helper()
	var w int
	for _, h := range []string{hdrWeight, hdrOrders10, hdrOrders1m} {
		v := res.Header.Get(h)
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("usage header %s = %q (status %d: %s)", h, v, res.Status, res.Body)
		}
		if h == hdrWeight {
			w = n
		}
	}
	return w
}

// decimalRe matches a plain decimal with exactly places digits after the point (none: an
// integer without a point).
func decimalRe(places int) *regexp.Regexp {
	if places == 0 {
		return regexp.MustCompile(`^-?[0-9]+$`)
	}
	return regexp.MustCompile(fmt.Sprintf(`^-?[0-9]+\.[0-9]{%d}$`, places))
}

// plainDecimal matches any plain (non-exponent) decimal.
var plainDecimal = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// wantDecimal fails unless raw is a JSON string holding a decimal with exactly places
// decimals (places < 0: any plain decimal) and returns the string.
func wantDecimal(t testing.TB, what string, raw json.RawMessage, places int) string {
	t.Helper()
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		t.Errorf("%s = %s, want a JSON string", what, raw)
		return ""
	}
	re := plainDecimal
	if places >= 0 {
		re = decimalRe(places)
	}
	if !re.MatchString(s) {
		t.Errorf("%s = %q, want a decimal with %d places", what, s, places)
	}
	return s
}

// wantInt fails unless raw is a JSON integer number and returns it.
func wantInt(t testing.TB, what string, raw json.RawMessage) int64 {
	t.Helper()
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		t.Errorf("%s = %s, want a JSON integer", what, raw)
	}
	return n
}

// fields decodes a JSON object into its raw fields.
func fields(t testing.TB, b []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not a JSON object: %s", b)
	}
	return m
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func nowMs() int64 { return time.Now().UnixMilli() }

// cmpDec compares two decimal strings numerically.
func cmpDec(a, b string) int {
	return dec.Cmp(dec.MustParse(a), dec.MustParse(b))
}

// eventuallyNoMismatch polls check until it returns "" and fails with its last answer when
// timeout passes.
func eventuallyNoMismatch(t testing.TB, timeout time.Duration, what string, check func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		why := check()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// poll checks cond every interval until it holds or timeout passes (slower than
// apptest.Eventually, for conditions whose every check costs request weight).
func poll(t testing.TB, timeout, interval time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(interval)
	}
}

// unlimitedKey issues a key over the seed logins with a weight budget no poll loop exhausts.
func (e *env) unlimitedKey(t testing.TB) apptest.Key {
	t.Helper()
	return e.svc.CreateKeyWithLimits(t, keys.CreateParams{
		Logins: []int64{loginReal1, loginReal2, loginDemo, loginCent, loginNoTrade},
		Limits: keys.Limits{WeightPerMinute: 1 << 30, Orders10s: 1 << 30, Orders1m: 1 << 30},
	})
}

// oversized announces a body over the 64 KiB limit and reads the answer before sending any
// of it, as a careful client does: the gateway refuses on the announced length at once and
// closes, so a client still busy writing the body may see a reset instead of the answer.
func oversized(t testing.TB, e *env, apiKey string) *gwclient.Response {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(e.svc.BaseURL, "https://"), e.svc.TLS)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	head := "POST /v1/ping HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n" +
		"Content-Length: " + strconv.Itoa(65<<10+2) + "\r\n"
	if apiKey != "" {
		head += "X-SVC-APIKEY: " + apiKey + "\r\n"
	}
	if _, err := io.WriteString(conn, head+"\r\n"); err != nil {
		t.Fatalf("write headers: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read answer: %v", err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("read body: %v", err)
	}
	return &gwclient.Response{Status: res.StatusCode, Header: res.Header, Body: body}
}
