package e2e_test

import (
	"net/http"
	"net/url"
	"testing"

	"tradesvc/gateway/gwclient"
)

// testSignatures: totalParams is the query string followed directly by the body, as sent;
// parameter order is free. Every read is a GET and the gateway has no signed POST/PUT yet,
// so body and split signing are exercised on GET /v1/account with a form body (which the
// gateway accepts on any method).
func testSignatures(t *testing.T, e *env) {
	c := e.client(e.main)
	acct := func(t *testing.T, rawQuery, body string) *gwclient.Response {
		t.Helper()
		return raw(t, c, http.MethodGet, "/v1/account", rawQuery, body, true)
	}
	login := func(t *testing.T, res *gwclient.Response) int64 {
		t.Helper()
		wantOK(t, res)
		return wantInt(t, "login", fields(t, res.Body)["login"])
	}
	sig := func(total string) string { return "signature=" + gwclient.Sign(e.main.Secret, total) }

	t.Run("query string", func(t *testing.T) {
		if l := login(t, signed(t, c, "/v1/account", url.Values{"login": {"1002"}}, gwclient.InQuery)); l != 1002 {
			t.Errorf("login %d, want 1002", l)
		}
	})
	t.Run("parameter order is free", func(t *testing.T) {
		ts := itoa(nowMs())
		for _, q := range []string{
			"login=1001&timestamp=" + ts,
			"timestamp=" + ts + "&login=1001",
			"recvWindow=7000&timestamp=" + ts + "&login=1001",
			"timestamp=" + ts + "&login=1001&recvWindow=7000",
		} {
			if l := login(t, acct(t, q+"&"+sig(q), "")); l != 1001 {
				t.Errorf("%s: login %d, want 1001", q, l)
			}
		}
	})
	t.Run("signature covers the bytes as sent", func(t *testing.T) {
		ts := itoa(nowMs())
		signedOrder := "login=1001&timestamp=" + ts
		sentOrder := "timestamp=" + ts + "&login=1001"
		wantErr(t, acct(t, sentOrder+"&"+sig(signedOrder), ""), http.StatusUnauthorized, -1022)
		// Percent-encoding as transmitted: %31 decodes to "1" but signs differently.
		enc := "login=100%31&timestamp=" + ts
		if l := login(t, acct(t, enc+"&"+sig(enc), "")); l != 1001 {
			t.Errorf("login %d, want 1001", l)
		}
		wantErr(t, acct(t, enc+"&"+sig("login=1001&timestamp="+ts), ""), http.StatusUnauthorized, -1022)
		// A tampered value after signing.
		wantErr(t, acct(t, "login=1002&timestamp="+ts+"&"+sig("login=1001&timestamp="+ts), ""), http.StatusUnauthorized, -1022)
	})
	t.Run("form body", func(t *testing.T) {
		if l := login(t, signed(t, c, "/v1/account", url.Values{"login": {"1003"}}, gwclient.InBody)); l != 1003 {
			t.Errorf("login %d, want 1003", l)
		}
	})
	t.Run("split query and body join without separator", func(t *testing.T) {
		if l := login(t, signed(t, c, "/v1/account", url.Values{"login": {"1004"}}, gwclient.Split)); l != 1004 {
			t.Errorf("login %d, want 1004", l)
		}
		ts := itoa(nowMs())
		q, b := "login=1001", "timestamp="+ts
		// Signed with an '&' inserted between the parts: not what was sent.
		wantErr(t, acct(t, q, b+"&"+sig(q+"&"+b)), http.StatusUnauthorized, -1022)
		// Signature in the query, timestamp in the body: still query followed by body.
		if l := login(t, acct(t, q+"&"+sig(q+b), b)); l != 1001 {
			t.Errorf("login %d, want 1001", l)
		}
	})
	t.Run("query value wins over body value", func(t *testing.T) {
		ts := itoa(nowMs())
		q, b := "login=1002", "login=1001&timestamp="+ts
		if l := login(t, acct(t, q, b+"&"+sig(q+b))); l != 1002 {
			t.Errorf("login %d, want the query's 1002", l)
		}
	})
}
