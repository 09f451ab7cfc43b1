package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/gateway/gwclient"
)

// TestCall runs `tradesvc call` against an in-process service: credentials from the
// environment or from RUN_DIR/env, the key header and signature chosen by the endpoint's
// security type, the clock offset from /v1/time, and the service's codes on errors.
func TestCall(t *testing.T) {
	svc := apptest.Start(t)
	svc.WaitForAccount(t, 30*time.Second, 1001)
	key := svc.CreateKey(t, []int64{1001, 1002}, false, nil)
	ca := filepath.Join(svc.Config.RunDir, "tls", "ca.pem")
	useEnv := func(t *testing.T) {
		t.Setenv("TRADESVC_RUN_DIR", t.TempDir()) // no env file there
		t.Setenv("TRADESVC_BASE_URL", svc.BaseURL)
		t.Setenv("TRADESVC_API_KEY", key.APIKey)
		t.Setenv("TRADESVC_API_SECRET", string(key.Secret))
		t.Setenv("TRADESVC_CA_CERT", ca)
	}

	t.Run("signed USER_DATA read prints the JSON", func(t *testing.T) {
		useEnv(t)
		code, out, errOut := cli(t, "call", "GET", "/v1/account", "login=1001")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var acc struct {
			Login    int64  `json:"login"`
			Currency string `json:"currency"`
		}
		if err := json.Unmarshal([]byte(out), &acc); err != nil || acc.Login != 1001 || acc.Currency == "" {
			t.Fatalf("output %q (%v)", out, err)
		}
	})

	t.Run("an error exits 1 with the service's code and msg", func(t *testing.T) {
		useEnv(t)
		code, out, errOut := cli(t, "call", "GET", "/v1/account", "login=1003") // outside the key's scope
		if code != 1 {
			t.Fatalf("exit %d, want 1: %s", code, out)
		}
		if !strings.Contains(errOut, "-2022") || !strings.Contains(errOut, "Login is out of scope") || !strings.Contains(errOut, "HTTP 400") {
			t.Fatalf("stderr %q, want the code -2022, its msg and the status", errOut)
		}
		if !strings.Contains(out, `"code": -2022`) {
			t.Fatalf("stdout %q, want the error envelope", out)
		}
		code, _, errOut = cli(t, "call", "GET", "/v1/ticker/price", "symbol=NOPE")
		if code != 1 || !strings.Contains(errOut, "-1121") {
			t.Fatalf("MARKET_DATA error: exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("MARKET_DATA sends the key, NONE nothing", func(t *testing.T) {
		useEnv(t)
		if code, out, errOut := cli(t, "call", "GET", "/v1/ticks", "symbol=BTCUSD", "limit=1"); code != 0 || !strings.HasPrefix(out, "[") {
			t.Fatalf("ticks: exit %d %q %s", code, out, errOut)
		}
		if code, out, errOut := cli(t, "call", "GET", "/v1/ping"); code != 0 || strings.TrimSpace(out) != "{}" {
			t.Fatalf("ping: exit %d %q %s", code, out, errOut)
		}
	})

	t.Run("credentials from RUN_DIR/env when the environment has none", func(t *testing.T) {
		dir := t.TempDir()
		env := "# written by make run\nexport TRADESVC_BASE_URL='" + svc.BaseURL + "'\nexport TRADESVC_API_KEY='" + key.APIKey +
			"'\nexport TRADESVC_API_SECRET='" + string(key.Secret) + "'\nexport TRADESVC_CA_CERT='" + ca + "'\n"
		if err := os.WriteFile(filepath.Join(dir, "env"), []byte(env), 0o600); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"TRADESVC_BASE_URL", "TRADESVC_API_KEY", "TRADESVC_API_SECRET", "TRADESVC_CA_CERT"} {
			t.Setenv(name, "")
		}
		t.Setenv("TRADESVC_RUN_DIR", dir)
		if code, out, errOut := cli(t, "call", "GET", "/v1/accounts"); code != 0 || !strings.Contains(out, `"login": 1002`) {
			t.Fatalf("exit %d %q %s", code, out, errOut)
		}
		// Flags win over the file: a wrong key is the service's -2015.
		code, _, errOut := cli(t, "call", "--api-key", "nope", "GET", "/v1/accounts")
		if code != 1 || !strings.Contains(errOut, "-2015") {
			t.Fatalf("--api-key override: exit %d, stderr %q", code, errOut)
		}
	})

	t.Run("a skewed local clock does not give -1021", func(t *testing.T) {
		useEnv(t)
		defer func(c func() time.Time) { callClock = c }(callClock)
		callClock = func() time.Time { return time.Now().Add(-10 * time.Minute) }
		// Signed with that clock as it is, the request is refused: the skew is real.
		c := svc.Client(key)
		c.Now = callClock
		res, err := c.Signed(context.Background(), http.MethodGet, "/v1/account", url.Values{"login": {"1002"}}, gwclient.InQuery)
		if err != nil || res.Status != http.StatusBadRequest || !strings.Contains(string(res.Body), "-1021") {
			t.Fatalf("unsynchronised request: %v %+v", err, res)
		}
		if code, _, errOut := cli(t, "call", "--recv-window", "2000", "GET", "/v1/account", "login=1002"); code != 0 {
			t.Fatalf("exit %d with the local clock 10 minutes behind: %s", code, errOut)
		}
	})

	t.Run("usage errors exit 2", func(t *testing.T) {
		useEnv(t)
		if code, _, _ := cli(t, "call", "GET"); code != 2 {
			t.Errorf("missing path: exit %d", code)
		}
		if code, _, _ := cli(t, "call", "GET", "/v1/account", "login"); code != 2 {
			t.Errorf("parameter without '=': exit %d", code)
		}
	})
}
