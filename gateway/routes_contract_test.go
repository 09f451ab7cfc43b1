package gateway_test

import (
	"testing"

	"tradesvc/gateway"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwclient/openapicheck"
	"tradesvc/gateway/gwtest"
)

// Every route the gateway serves is an operation of docs/openapi.yaml with the same security
// type (and the same in gwclient's table, which `tradesvc call` signs by); every retired path is
// declared retired (deprecated, 410 only). The reverse direction, an operation the gateway does
// not serve, is caught by schemathesis and the end-to-end validation (it would answer 404).
func TestEveryRouteIsInTheContract(t *testing.T) {
	v, err := openapicheck.Repo()
	if err != nil {
		t.Fatal(err)
	}
	srv := gwtest.NewEnv().Build(t, gateway.Config{})
	routes := srv.Routes()
	if len(routes) == 0 {
		t.Fatal("the gateway lists no route")
	}
	for _, r := range routes {
		item := v.Doc().Paths.Find(r.Path)
		if item == nil {
			t.Errorf("%s %s: served but not in docs/openapi.yaml", r.Method, r.Path)
			continue
		}
		op := item.GetOperation(r.Method)
		if r.Retired {
			if r.Method == "CONNECT" || r.Method == "HEAD" {
				continue // OpenAPI declares neither for a path without GET semantics
			}
			if op == nil || !op.Deprecated || op.Responses.Status(410) == nil || op.Responses.Len() != 1 {
				t.Errorf("%s %s: retired, but the document does not declare it deprecated with 410 alone", r.Method, r.Path)
			}
			continue
		}
		if op == nil {
			t.Errorf("%s %s: served but the document has no %s operation there", r.Method, r.Path, r.Method)
			continue
		}
		if got, _ := op.Extensions["x-security-type"].(string); got != r.Security.String() {
			t.Errorf("%s %s: security %s, the document's x-security-type %q", r.Method, r.Path, r.Security, got)
		}
		if s, ok := gwclient.EndpointSecurity(r.Method, r.Path); !ok || string(s) != r.Security.String() {
			t.Errorf("%s %s: security %s, gwclient's table %q (known %v)", r.Method, r.Path, r.Security, s, ok)
		}
	}
}
