package e2e_test

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/infra/mt5/remote"
	"tradesvc/infra/mt5/sim"
	"tradesvc/infra/testenv"
)

// shiftedClock is the simulator's clock for the analytics test: real time moved by an
// offset the test changes, so that trades happen "yesterday" and a rollover (swaps, DAY
// expirations) happens when the clock jumps to today.
type shiftedClock struct{ offset atomic.Int64 }

func (c *shiftedClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func (c *shiftedClock) set(d time.Duration) { c.offset.Store(int64(d)) }

// clockedSim runs a simulator on clock and serves it on a loopback port as `serve --roles
// sim` does (token in runDir/sim.token), so services launched with TRADESVC_SIM_ADDR reach
// it while the test drives it directly. It stops when the test ends.
func clockedSim(t *testing.T, runDir string, clock sim.Clock) (*sim.Sim, string) {
	t.Helper()
	s, err := sim.Open(sim.Config{DataDir: t.TempDir(), Clock: clock, TickInterval: 250 * time.Millisecond,
		HousekeepInterval: 200 * time.Millisecond, Sync: sim.SyncNone, Logger: testenv.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	token, err := remote.LoadOrCreateToken(filepath.Join(runDir, "sim.token"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: remote.NewServer(remote.ServerConfig{Port: s, Admin: s, Token: token, Context: ctx}),
		ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.Errorf("simulator server shutdown: %v", err)
		}
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("simulator server: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Errorf("simulator close: %v", err)
		}
	})
	return s, ln.Addr().String()
}

// remoteEnv starts the service (gateway, executor, projector) against the simulator at
// simAddr with vars (plus extra), waits for the pipeline like startEnv, and returns it.
func remoteEnv(t *testing.T, vars map[string]string, simAddr string, extra map[string]string) (*env, *apptest.Process) {
	t.Helper()
	v := maps.Clone(vars)
	v["TRADESVC_ROLES"] = "gateway,executor,relay,projector"
	v["TRADESVC_SIM_ADDR"] = simAddr
	maps.Copy(v, extra)
	p := apptest.Launch(t, v)
	e := &env{svc: apptest.Serve(t, p)}
	e.digits = e.svc.WaitForSymbols(t, 60*time.Second, "BTCUSD", "ETHUSD", "USDRUB")
	e.svc.WaitForQuote(t, 60*time.Second, "BTCUSD")
	for _, l := range []int64{loginReal1, loginReal2, loginDemo, loginCent} {
		e.svc.WaitForAccount(t, 60*time.Second, l)
	}
	e.main = e.svc.CreateKey(t, []int64{loginReal1, loginReal2, loginDemo, loginCent}, false, nil)
	return e, p
}

// holdOn sets and holds a quote on the simulator s and waits until the gateway shows it.
func (e *env) holdOn(t testing.TB, s *sim.Sim, symbol, bid, ask string) {
	t.Helper()
	if err := s.SetQuote(symbol, dec.MustParse(bid), dec.MustParse(ask)); err != nil {
		t.Fatalf("hold quote %s: %v", symbol, err)
	}
	c := e.client(e.main)
	eventuallyNoMismatch(t, 10*time.Second, "quote "+symbol+" "+bid+"/"+ask, func() string {
		res, err := c.Keyed(context.Background(), http.MethodGet, "/v1/ticker/price", url.Values{"symbol": {symbol}})
		if err != nil || res.Status != http.StatusOK {
			return "no quote"
		}
		m := fields(t, res.Body)
		if cmpDec(str(m, "bid"), bid) != 0 || cmpDec(str(m, "ask"), ask) != 0 {
			return string(res.Body)
		}
		return ""
	})
}
