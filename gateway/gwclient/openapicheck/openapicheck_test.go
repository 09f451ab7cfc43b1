package openapicheck_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwclient/openapicheck"
)

func repo(t *testing.T) *openapicheck.Validator {
	t.Helper()
	v, err := openapicheck.Repo()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func request(method, target string) *http.Request {
	return httptest.NewRequest(method, "https://127.0.0.1:8443"+target, nil)
}

func response(status int, body string, headers ...string) *gwclient.Response {
	h := http.Header{"Content-Type": {"application/json"}}
	for i := 0; i+1 < len(headers); i += 2 {
		h.Set(headers[i], headers[i+1])
	}
	return &gwclient.Response{Status: status, Header: h, Body: []byte(body)}
}

// usage are the usage headers of a keyed response.
var usage = []string{"X-SVC-USED-WEIGHT-1M", "3", "X-SVC-ORDER-COUNT-10S", "0", "X-SVC-ORDER-COUNT-1M", "0"}

const account = `{"login":1001,"group":"real\\hedge-usd","currency":"USD","leverage":100,"balance":"10000.0000",` +
	`"credit":"0.0000","equity":"10000.0000","margin":"0.0000","freeMargin":"10000.0000","profit":"0.0000",` +
	`"marginLevel":"0.00","tradeAllowed":true,"updateTime":0}`

func TestRepositoryDocumentIsValidOpenAPI31(t *testing.T) {
	v := repo(t)
	if got := v.Doc().OpenAPI; !strings.HasPrefix(got, "3.1.") {
		t.Fatalf("openapi %q, want 3.1.x", got)
	}
}

func TestResponseAsTheServiceSendsItPasses(t *testing.T) {
	v := repo(t)
	for _, c := range []struct {
		req *http.Request
		res *gwclient.Response
	}{
		{request("GET", "/v1/ping"), response(200, `{}`)},
		{request("GET", "/v1/time"), response(200, `{"serverTime":1795335243354}`)},
		{request("GET", "/v1/account?login=1001"), response(200, account, usage...)},
		{request("GET", "/v1/klines?symbol=BTCUSD&interval=1m"),
			response(200, `[[1795335180000,"60000.00","60011.91","59999.44","60002.74",32,1795335239999,0]]`, usage...)},
		{request("GET", "/v1/ticker/price?symbol=NOPE"), response(400, `{"code":-1121,"msg":"Invalid symbol."}`, usage...)},
		{request("GET", "/v1/ticker/price"), response(401, `{"code":-1002,"msg":"API-key header missing or malformed."}`)},
		{request("POST", "/v1/leverage"), response(410, `{"code":-1016,"msg":"This endpoint has been retired."}`)},
		{request("GET", "/v1/nope"), response(404, `{"code":-1020,"msg":"Unknown endpoint."}`)},
		{request("QUERY", "/v1/ping"), response(405, `{"code":-1020,"msg":"Method not allowed for this endpoint."}`, "Allow", "GET")},
	} {
		if err := v.Check(c.req, c.res); err != nil {
			t.Errorf("%s %s: %v", c.req.Method, c.req.URL, err)
		}
	}
}

// The deliberate mismatch: a field renamed in a response fails validation, whether the
// service renamed it (the response differs from the document) or the document did.
func TestRenamedResponseFieldFails(t *testing.T) {
	v := repo(t)
	renamed := strings.Replace(account, `"equity"`, `"equityValue"`, 1)
	err := v.Check(request("GET", "/v1/account?login=1001"), response(200, renamed, usage...))
	if err == nil {
		t.Fatal("a response with equity renamed to equityValue passed validation")
	}
	if !strings.Contains(err.Error(), "equity") {
		t.Errorf("the error does not name the missing field: %v", err)
	}
}

func TestFieldRenamedInTheDocumentFails(t *testing.T) {
	root, err := openapicheck.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, openapicheck.DocPath))
	if err != nil {
		t.Fatal(err)
	}
	// serverTime is a required field of components.schemas.ServerTime (and nowhere else a key).
	if bytes.Count(doc, []byte("        serverTime: {type: integer, format: int64}\n")) == 0 {
		t.Fatal("the document's ServerTime schema changed shape; update this test")
	}
	drifted := bytes.ReplaceAll(doc, []byte("required: [serverTime]"), []byte("required: [serverTimeMs]"))
	drifted = bytes.ReplaceAll(drifted, []byte("        serverTime: {type: integer, format: int64}\n"),
		[]byte("        serverTimeMs: {type: integer, format: int64}\n"))
	drifted = bytes.ReplaceAll(drifted, []byte("example: {serverTime: 1795335243354}"), []byte("example: {serverTimeMs: 1795335243354}"))
	v, err := openapicheck.Parse(drifted)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Check(request("GET", "/v1/time"), response(200, `{"serverTime":1795335243354}`)); err == nil {
		t.Fatal("the service's /v1/time answer passed a document that renamed serverTime")
	}
}

func TestUndeclaredStatusFails(t *testing.T) {
	v := repo(t)
	if err := v.Check(request("GET", "/v1/ping"), response(404, `{"code":-1020,"msg":"Unknown endpoint."}`)); err == nil {
		t.Fatal("404 on /v1/ping passed: the operation declares no 404")
	}
}

func TestMissingUsageHeaderOnKeyedResponseFails(t *testing.T) {
	v := repo(t)
	if err := v.Check(request("GET", "/v1/account?login=1001"), response(200, account)); err == nil {
		t.Fatal("a keyed 200 without the usage headers passed")
	}
}

func TestErrorEnvelopeIsRequired(t *testing.T) {
	v := repo(t)
	if err := v.Check(request("GET", "/v1/ticker/price?symbol=X"), response(400, `{"error":"bad symbol"}`, usage...)); err == nil {
		t.Fatal("a 400 without code and msg passed")
	}
}

func TestRoutingErrorsFollowTheDocumentsRules(t *testing.T) {
	v := repo(t)
	if err := v.Check(request("GET", "/v1/nope"), response(200, `{}`)); err == nil {
		t.Error("200 for a path no operation declares passed")
	}
	if err := v.Check(request("TRACE", "/v1/ping"), response(405, `{"code":-1020,"msg":"Method not allowed."}`)); err == nil {
		t.Error("405 without Allow passed")
	}
	if err := v.Check(request("DELETE", "/v1/time"), response(404, `{"code":-1020,"msg":"Unknown endpoint."}`)); err == nil {
		t.Error("404 for a known path with another method passed (want 405)")
	}
}

// The client hook: gwclient.Client.Check sees every exchange and its error reaches the caller.
func TestClientCheckReportsAMismatch(t *testing.T) {
	v := repo(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"serverTimeMs":1795335243354}`))
	}))
	defer srv.Close()
	c := &gwclient.Client{BaseURL: srv.URL, HTTP: srv.Client(), Check: v.Check}
	res, err := c.Public(context.Background(), http.MethodGet, "/v1/time", nil)
	if err == nil {
		t.Fatal("the client returned no error for a response the contract does not allow")
	}
	if res == nil || res.Status != 200 {
		t.Fatalf("the response should come back with the error: %+v", res)
	}
}

// The stream URLs are not REST operations; their plain-HTTP answers follow x-stream-paths.
func TestStreamURLsAnswerPlainHTTPWith1020(t *testing.T) {
	v := repo(t)
	for _, p := range []string{"/ws", "/ws/BTCUSD@tick", "/stream?streams=BTCUSD@tick"} {
		if err := v.Check(request("GET", p), response(400, `{"code":-1020,"msg":"Plain HTTP is not supported here."}`)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		if err := v.Check(request("GET", p), response(200, `{}`)); err == nil {
			t.Errorf("%s: 200 passed", p)
		}
		if err := v.Check(request("GET", p), response(400, `{"code":-1121,"msg":"Invalid symbol."}`)); err == nil {
			t.Errorf("%s: 400 with -1121 passed", p)
		}
	}
	if err := v.Check(request("GET", "/ws/a/b"), response(400, `{"code":-1020,"msg":"x"}`)); err == nil {
		t.Error("/ws/a/b is no stream URL, yet 400 passed")
	}
}
