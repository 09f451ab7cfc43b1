package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// cli runs `tradesvc sim args...` the way main does, through a token file.
func (st *simStack) cli(t *testing.T, tokenPath string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = RunSimCommand(context.Background(), st.srv.Listener.Addr().String(), tokenPath, args, &o, &e)
	return code, o.String(), e.String()
}

func writeToken(t *testing.T, tok string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sim.token")
	if err := os.WriteFile(p, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func decodeJSON[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout %q is not the expected JSON: %v", s, err)
	}
	return v
}

func TestSimCLICommands(t *testing.T) {
	st := startSim(t)
	tok := writeToken(t, testToken)
	ctx := context.Background()

	// quote: sets and holds.
	code, out, errs := st.cli(t, tok, "quote", "--symbol", "BTCUSD", "--bid", "61000.00", "--ask", "61000.40")
	if code != 0 || errs != "" {
		t.Fatalf("quote: %d %q", code, errs)
	}
	q := decodeJSON[QuoteState](t, out)
	if q != (QuoteState{Symbol: "BTCUSD", Bid: "61000.00", Ask: "61000.40", Time: q.Time, Held: true}) || q.Time == 0 {
		t.Fatalf("quote state: %+v", q)
	}
	st.sim.GenerateTicks(20) // the generator leaves a held symbol alone
	if tk, err := st.client.Quote(ctx, "BTCUSD"); err != nil || dec.String(tk.Bid) != "61000.00" || dec.String(tk.Ask) != "61000.40" {
		t.Fatalf("held quote moved: %+v, %v", tk, err)
	}

	// feed --resume: released.
	code, out, errs = st.cli(t, tok, "sim", "feed", "--resume", "--symbol", "BTCUSD")
	if r := decodeJSON[QuoteState](t, out); code != 0 || errs != "" || r.Symbol != "BTCUSD" || r.Held {
		t.Fatalf("feed resume: %d %q %q", code, out, errs)
	}
	st.sim.GenerateTicks(50) // released: the generator moves it again
	if tk, _ := st.client.Quote(ctx, "BTCUSD"); dec.String(tk.Bid) == "61000.00" && dec.String(tk.Ask) == "61000.40" {
		t.Fatalf("released quote never moved: %+v", tk)
	}

	// deposit: a balance deal, visible as facts.
	cursor := factHead(t, st)
	code, out, errs = st.cli(t, tok, "deposit", "--login", "1003", "--amount", "250.75")
	if code != 0 || errs != "" {
		t.Fatalf("deposit: %d %q", code, errs)
	}
	d := decodeJSON[DepositResult](t, out)
	if d.Login != 1003 || d.Deal == 0 || d.Amount != "250.75" || d.Account.Balance != "10250.75" {
		t.Fatalf("deposit result: %+v", d)
	}
	newFacts, err := st.client.Facts(ctx, cursor, 100)
	if err != nil {
		t.Fatal(err)
	}
	var sawUpdate bool
	for _, f := range newFacts {
		sawUpdate = sawUpdate || (f.Kind == mt5.FactAccount && f.Action == trading.ChangeUpdate && f.Login == 1003 &&
			dec.String(f.Account.Balance) == "10250.75")
	}
	if !sawUpdate {
		t.Fatalf("no ACCOUNT_UPDATE fact after deposit: %+v", newFacts)
	}

	// account: flag off, then on; without the flag, just shows the account.
	code, out, errs = st.cli(t, tok, "account", "--login", "1001", "--trade-allowed=false")
	if code != 0 || errs != "" || decodeJSON[AccountState](t, out).TradeAllowed {
		t.Fatalf("account off: %d %q %q", code, out, errs)
	}
	if acc, _ := st.client.Account(ctx, 1001); acc.TradeAllowed {
		t.Fatal("trade-allowed=false did not reach the simulator")
	}
	// The value may also follow as its own word.
	code, out, _ = st.cli(t, tok, "account", "--login", "1001", "--trade-allowed", "true")
	if code != 0 || !decodeJSON[AccountState](t, out).TradeAllowed {
		t.Fatalf("account on: %d %q", code, out)
	}
	code, out, _ = st.cli(t, tok, "account", "--login", "1005")
	if a := decodeJSON[AccountState](t, out); code != 0 || a.Login != 1005 || a.TradeAllowed || a.Balance != "10000.00" {
		t.Fatalf("account show: %d %+v", code, a)
	}

	// fault: each mode of the brief, with latency and retcode.
	for _, mode := range []string{"no-answer", "timeout", "requote", "disconnect", "shortfalls", "latency", "none"} {
		code, out, errs = st.cli(t, tok, "fault", "--mode", mode, "--latency", "200ms")
		if code != 0 || errs != "" {
			t.Fatalf("fault %s: %d %q", mode, code, errs)
		}
		if f := decodeJSON[FaultState](t, out); f != (FaultState{Mode: mode, LatencyMs: 200}) {
			t.Fatalf("fault %s state: %+v", mode, f)
		}
		if f := st.sim.CurrentFault(); string(f.Mode) != mode || f.Latency.Milliseconds() != 200 {
			t.Fatalf("fault %s not in the simulator: %+v", mode, f)
		}
	}
	code, out, _ = st.cli(t, tok, "fault", "--mode", "refuse", "--retcode", "10019")
	if f := decodeJSON[FaultState](t, out); code != 0 || f != (FaultState{Mode: "refuse", Retcode: 10019}) {
		t.Fatalf("fault refuse: %d %+v", code, f)
	}
	st.cli(t, tok, "fault", "--mode", "none")
	if f := st.sim.CurrentFault(); f.Mode != "none" || f.Latency != 0 {
		t.Fatalf("fault none: %+v", f)
	}

	// logins.
	code, out, _ = st.cli(t, tok, "logins")
	if code != 0 || strings.TrimSpace(out) != `{"logins":[1001,1002,1003,1004,1005,1006,`+
		`1101,1102,1103,1104,1105,1106,1107,1108,1109,1110,1111,1112,1113,1114,1115,1116]}` {
		t.Fatalf("logins: %d %q", code, out)
	}
	code, out, _ = st.cli(t, tok, "state")
	if s := decodeJSON[StateResult](t, out); code != 0 || s.Fault.Mode != "none" || len(s.Logins) != 22 {
		t.Fatalf("state: %d %+v", code, s)
	}
}

func TestSimCLIRefusesBadArguments(t *testing.T) {
	st := startSim(t)
	tok := writeToken(t, testToken)
	before := st.sim.CurrentFault()
	acc0, _ := st.client.Account(context.Background(), 1001)
	cases := []struct {
		args []string
		want string // in stderr
	}{
		{nil, "usage"},
		{[]string{"frobnicate"}, "unknown command"},
		{[]string{"quote", "--bid", "1.1", "--ask", "1.2"}, "--symbol is required"},
		{[]string{"quote", "--symbol", "EURUSD", "--ask", "1.2"}, "--bid is required"},
		{[]string{"quote", "--symbol", "EURUSD", "--bid", "1e5", "--ask", "1.2"}, "malformed decimal"},
		{[]string{"quote", "--symbol", "EURUSD", "--bid", "abc", "--ask", "1.2"}, "malformed decimal"},
		{[]string{"quote", "--symbol", "EURUSD", "--bid", "1.10001", "--ask", "1.10000"}, "above"},
		{[]string{"quote", "--symbol", "EURUSD", "--bid", "-1", "--ask", "1.2"}, "must be positive"},
		{[]string{"quote", "--symbol", "EURUSD", "--bid", "NaN", "--ask", "1.2"}, "malformed decimal"},
		{[]string{"feed", "--symbol", "EURUSD"}, "--resume is required"},
		{[]string{"feed", "--resume"}, "--symbol is required"},
		{[]string{"deposit", "--login", "1001"}, "--amount is required"},
		{[]string{"deposit", "--login", "1001", "--amount", "0"}, "must not be zero"},
		{[]string{"deposit", "--login", "1001", "--amount", "1.5.5"}, "malformed decimal"},
		{[]string{"deposit", "--login", "1001", "--amount", "0.1e1"}, "malformed decimal"},
		{[]string{"deposit", "--login", "x", "--amount", "1"}, "invalid value"},
		{[]string{"deposit", "--amount", "1"}, "--login must be a positive"},
		{[]string{"account", "--login", "1001", "--trade-allowed"}, "needs an argument"},
		{[]string{"account", "--login", "1001", "--trade-allowed=false", "now"}, "unexpected argument"},
		{[]string{"account", "--login", "1001", "--trade-allowed=maybe"}, "want true or false"},
		{[]string{"fault"}, "--mode must be one of"},
		{[]string{"fault", "--mode", "bogus"}, "--mode must be one of"},
		{[]string{"fault", "--mode", "refuse"}, "needs --retcode"},
		{[]string{"fault", "--mode", "none", "--retcode", "10019"}, "--retcode goes with --mode refuse"},
		{[]string{"fault", "--mode", "latency", "--latency", "fast"}, "invalid value"},
		{[]string{"fault", "--mode", "latency", "--latency", "-5ms"}, "must not be negative"},
		{[]string{"logins", "extra"}, "unexpected argument"},
	}
	for _, c := range cases {
		code, out, errs := st.cli(t, tok, c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errs, c.want)
		}
	}
	// Refusals by the simulator: valid syntax, exit 1, the reason on stderr.
	refused := []struct {
		args []string
		want string
	}{
		{[]string{"quote", "--symbol", "NOPE", "--bid", "1.1", "--ask", "1.2"}, "unknown symbol"},
		{[]string{"quote", "--symbol", "EURUSD", "--bid", "1.100001", "--ask", "1.2"}, "tick size"},
		{[]string{"feed", "--resume", "--symbol", "NOPE"}, "unknown symbol"},
		{[]string{"deposit", "--login", "424242", "--amount", "5"}, "unknown login"},
		{[]string{"deposit", "--login", "1001", "--amount", "-20000"}, "negative"},
		{[]string{"account", "--login", "424242", "--trade-allowed=false"}, "unknown login"},
		{[]string{"fault", "--mode", "refuse", "--retcode", "10009"}, "refusal return code"},
	}
	for _, c := range refused {
		code, out, errs := st.cli(t, tok, c.args...)
		if code != exitError || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 1 and %q", c.args, code, out, errs, c.want)
		}
	}
	// Nothing of the above changed the simulator.
	if f := st.sim.CurrentFault(); f != before {
		t.Errorf("fault changed to %+v", f)
	}
	if acc, _ := st.client.Account(context.Background(), 1001); dec.Cmp(acc.Balance, acc0.Balance) != 0 || !acc.TradeAllowed {
		t.Errorf("account changed: %+v", acc)
	}
}

func TestSimCLITokenHandling(t *testing.T) {
	st := startSim(t)
	code, out, errs := st.cli(t, filepath.Join(t.TempDir(), "missing.token"), "logins")
	if code != exitError || out != "" || !strings.Contains(errs, "is the sim role running") {
		t.Fatalf("missing token: %d %q %q", code, out, errs)
	}
	code, out, errs = st.cli(t, writeToken(t, "not-the-token"), "logins")
	if code != exitError || out != "" || !strings.Contains(errs, "unauthorized") {
		t.Fatalf("wrong token: %d %q %q", code, out, errs)
	}
	// The token file the sim role would write works as is.
	p := filepath.Join(t.TempDir(), "sim.token")
	tok, err := LoadOrCreateToken(p)
	if err != nil {
		t.Fatal(err)
	}
	srv := httpServerFor(t, st, tok)
	var o, e bytes.Buffer
	if code := RunSimCommand(context.Background(), srv, p, []string{"logins"}, &o, &e); code != 0 {
		t.Fatalf("generated token: %d %q", code, e.String())
	}
	// Unreachable simulator: exit 1.
	o.Reset()
	e.Reset()
	if code := RunSimCommand(context.Background(), "127.0.0.1:1", p, []string{"logins"}, &o, &e); code != exitError || o.Len() != 0 {
		t.Fatalf("unreachable: %d %q %q", code, o.String(), e.String())
	}
}

// httpServerFor serves st's simulator under another token and returns its address.
func httpServerFor(t *testing.T, st *simStack, token string) string {
	t.Helper()
	srv := httptest.NewServer(NewServer(ServerConfig{Port: st.sim, Admin: st.sim, Token: token}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// factHead is the Seq of the newest fact (0 when there is none yet).
func factHead(t *testing.T, st *simStack) uint64 {
	t.Helper()
	var head uint64
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		fs, err := st.sim.Facts(ctx, head, 1000)
		cancel()
		if err != nil || len(fs) == 0 {
			return head
		}
		head = fs[len(fs)-1].Seq
	}
}
