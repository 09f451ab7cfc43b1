package gateway_test

import (
	"testing"

	"tradesvc/gateway"
)

// Regression (issue 9): QUERY and other extension methods got Fiber's plain-text 400, TRACE on
// a known path no Allow header; schemathesis expects 405 with Allow for any method a path is
// not served with.
func TestUnservedMethodOnKnownPathIs405WithAllow(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	for _, m := range []string{"POST", "PUT", "DELETE", "PATCH", "TRACE", "OPTIONS", "QUERY", "FROBNICATE"} {
		r := must(t)(c.Raw(bg, m, "/v1/ping", "", "", false))
		expectErr(t, r, 405, -1020)
		if got := r.Header.Get("Allow"); got != "GET" {
			t.Errorf("%s /v1/ping: Allow %q, want GET", m, got)
		}
	}
}

func TestExtensionMethodOnUnknownPathIs404(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	for _, m := range []string{"QUERY", "FROBNICATE"} {
		r := must(t)(c.Raw(bg, m, "/v1/nope", "", "", false))
		expectErr(t, r, 404, -1020)
		if got := r.Header.Get("Allow"); got != "" {
			t.Errorf("%s /v1/nope: Allow %q, want none", m, got)
		}
	}
}

// Retired paths answer -1016 to every method HTTP routes; an extension method (QUERY) is not one
// the endpoint ever had, so it is 405 like anywhere else, with Allow naming the routed methods.
func TestRetiredPathAnswersEveryRoutedMethodAnd405ForExtensions(t *testing.T) {
	_, c := start(t, gateway.Config{}, nil)
	for _, m := range []string{"GET", "POST", "PUT", "DELETE", "PATCH", "TRACE", "OPTIONS"} {
		expectErr(t, must(t)(c.Raw(bg, m, "/v1/order/test", "", "", false)), 410, -1016)
	}
	r := must(t)(c.Raw(bg, "QUERY", "/v1/order/test", "", "", false))
	expectErr(t, r, 405, -1020)
	if r.Header.Get("Allow") == "" {
		t.Errorf("QUERY /v1/order/test: no Allow header")
	}
}
