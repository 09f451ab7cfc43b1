package app_test

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/mt5/remote"
)

// The trade server runs in its own process (`serve --roles sim`); the executor reaches it
// over the network and is killed and restarted while the trade server keeps running. A
// balance change made while no executor runs must still reach the read models, exactly once.
func TestExecutorRestartAgainstARemoteSimulatorLosesNoFact(t *testing.T) {
	ctx := context.Background()
	vars := apptest.Vars(t)

	simAddr, _, admin := launchRemoteSim(t, vars)

	svcVars := maps.Clone(vars)
	svcVars["TRADESVC_ROLES"] = "gateway,executor,relay,projector"
	svcVars["TRADESVC_SIM_ADDR"] = simAddr

	first := apptest.Launch(t, svcVars)
	svc := apptest.Serve(t, first)
	key := svc.CreateKey(t, []int64{1001}, true, nil)
	balance := func(s *apptest.Service) string {
		res, err := s.Client(key).Signed(ctx, http.MethodGet, "/v1/account", url.Values{"login": {"1001"}}, gwclient.InQuery)
		if err != nil || res.Status != http.StatusOK {
			return ""
		}
		var acct struct {
			Balance string `json:"balance"`
		}
		_ = json.Unmarshal(res.Body, &acct)
		return acct.Balance
	}

	if _, err := admin.Deposit(ctx, 1001, dec.MustParse("100")); err != nil {
		t.Fatal(err)
	}
	apptest.Eventually(t, 30*time.Second, "the first deposit in the account read model", func() bool {
		return balance(svc) == "10100.0000"
	})

	first.Stop(t) // the executor dies; the trade server keeps running
	if _, err := admin.Deposit(ctx, 1001, dec.MustParse("250.50")); err != nil {
		t.Fatal(err)
	}

	second := apptest.Launch(t, svcVars)
	svc2 := apptest.Serve(t, second)
	apptest.Eventually(t, 30*time.Second, "the deposit made while no executor ran", func() bool {
		return balance(svc2) == "10350.5000"
	})

	// Both balance deals reached the deal history once each (the relay resumed from its cursor).
	var n int64
	conn := svc2.ClickHouse(t)
	apptest.Eventually(t, 30*time.Second, "both balance deals in the ClickHouse deal history", func() bool {
		row := conn.QueryRow(ctx, "SELECT toInt64(count()) FROM deals FINAL WHERE login = 1001 AND action = 2")
		if err := row.Scan(&n); err != nil {
			t.Fatalf("count deals: %v", err)
		}
		return n == 2
	})
}

// launchRemoteSim starts the simulator role in a process of its own and returns its network
// address, the token that reaches it, and its admin client.
func launchRemoteSim(t *testing.T, vars map[string]string) (addr, token string, admin *remote.AdminClient) {
	t.Helper()
	_, addr = apptest.LaunchSim(t, vars)
	token, err := remote.ReadToken(filepath.Join(vars["TRADESVC_RUN_DIR"], "sim.token"))
	if err != nil {
		t.Fatal(err)
	}
	if admin, err = remote.NewAdminClient(remote.ClientConfig{Addr: addr, Token: token}); err != nil {
		t.Fatal(err)
	}
	return addr, token, admin
}
