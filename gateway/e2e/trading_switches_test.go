package e2e_test

import (
	"context"
	"maps"
	"net/http"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/command"
)

// TRADE endpoints answer -1017 while trading is switched off and -5015 while no executor
// runs, before anything is queued and before the ORDERS bucket is charged; reads stay up.
func TestTradingSwitches(t *testing.T) {
	t.Run("trading switched off", func(t *testing.T) {
		e := startEnv(t, "BTCUSD")
		tr := e.trader(t)
		tr.waitExecutionPath(t) // so that -1017 is the switch, not a missing executor
		sw, err := command.NewSwitches(e.svc.PG, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.SetTrading(context.Background(), false); err != nil {
			t.Fatal(err)
		}
		eventuallyNoMismatch(t, 10*time.Second, "-1017 on POST /v1/order", func() string {
			res := tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01"))
			if res.Status != http.StatusServiceUnavailable {
				return string(res.Body)
			}
			return ""
		})
		// The ORDERS count of the 10 s window: no refused request raises it. (The window is
		// aligned to the epoch, so it may start afresh at 0 between two requests; a charge
		// would still raise it from there.)
		charged := -1
		for _, c := range []struct{ method, path string }{
			{http.MethodPost, "/v1/order"}, {http.MethodPut, "/v1/order"}, {http.MethodDelete, "/v1/order"},
			{http.MethodPut, "/v1/position"}, {http.MethodDelete, "/v1/position"},
			{http.MethodDelete, "/v1/allOpenPositions"}, {http.MethodPost, "/v1/batchOrders"},
		} {
			res := tr.send(t, c.method, c.path, market(loginReal1, "BTCUSD", "BUY", "0.01"))
			wantErr(t, res, 503, -1017)
			got := header(t, res, hdrOrders10)
			if charged >= 0 && got > charged {
				t.Errorf("%s %s charged the ORDERS bucket: %d, was %d", c.method, c.path, got, charged)
			}
			charged = got
		}
		wantOK(t, tr.get(t, "/v1/positions", vals("login", itoa(loginReal1))))
		wantOK(t, tr.get(t, "/v1/account", vals("login", itoa(loginReal1))))
		if err := sw.SetTrading(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		eventuallyNoMismatch(t, 10*time.Second, "trading back on", func() string {
			if res := tr.post(t, "/v1/order", market(loginReal1, "BTCUSD", "BUY", "0.01")); res.Status != 200 {
				return string(res.Body)
			}
			return ""
		})
	})
	t.Run("no executor running", func(t *testing.T) {
		vars := apptest.Vars(t)
		noExec := maps.Clone(vars)
		noExec["TRADESVC_ROLES"] = "gateway,projector,sim"
		svc := apptest.Serve(t, apptest.Launch(t, noExec))
		e := &env{svc: svc} // no executor: no relay either, so no reference data is needed or waited for
		tr := e.trader(t)
		for _, path := range []string{"/v1/order", "/v1/batchOrders"} {
			res := tr.post(t, path, market(loginReal1, "BTCUSD", "BUY", "0.01"))
			wantErr(t, res, 503, -5015)
			if res.Header.Get(hdrOrders10) != "0" {
				t.Errorf("%s charged the ORDERS bucket: %s", path, res.Header.Get(hdrOrders10))
			}
		}
		// Reads are not behind the execution-path switch: without a relay no account was
		// projected, so the read answers as for any unknown account (-2022), never -5015.
		wantErr(t, tr.get(t, "/v1/openOrders", vals("login", itoa(loginReal1))), 400, -2022)
	})
}
