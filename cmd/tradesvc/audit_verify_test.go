package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/gateway/gwclient"
)

// The auditor's two commands against a running service: `audit` tells the story of an order
// placed through the API (table and JSON lines), `replay --verify` finds the rebuilt read
// models equal to the live ones, then names the row a test corrupted and exits 1.
func TestAuditAndReplayVerifyCommands(t *testing.T) {
	vars := apptest.Vars(t)
	svc := apptest.Serve(t, apptest.Launch(t, vars))
	for k, v := range vars {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	svc.WaitForQuote(t, 60*time.Second, "BTCUSD")
	svc.WaitForAccount(t, 60*time.Second, 1001)
	key := svc.CreateKey(t, []int64{1001}, false, nil)
	c := svc.Client(key)
	var m map[string]any
	apptest.Eventually(t, 30*time.Second, "a filled order", func() bool {
		res, err := c.Signed(ctx, http.MethodPost, "/v1/order", url.Values{"login": {"1001"}, "symbol": {"BTCUSD"},
			"type": {"MARKET"}, "side": {"BUY"}, "volume": {"0.01"}, "newClientOrderId": {"audit-cli-1"},
			"newOrderRespType": {"RESULT"}}, gwclient.InBody)
		if err != nil || res.Status != http.StatusOK {
			return false // the execution path may not be up yet (-5015); a retry is the same operation
		}
		m = map[string]any{}
		return json.Unmarshal(res.Body, &m) == nil && m["status"] == "FILLED"
	})
	dealID := int64(m["dealId"].(float64))

	code, out, errOut := cli(t, "audit", "--login", "1001", "--client-order-id", "audit-cli-1")
	if code != 0 {
		t.Fatalf("audit: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, want := range []string{"audit-cli-1", "received", "recorded", "appended", "sent", "answered", "filled",
		"mt5RetCode 10009", fmt.Sprintf("deal %d", dealID), "POST /v1/order", "complete", "read model"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit table lacks %q:\n%s", want, out)
		}
	}
	apptest.Eventually(t, 30*time.Second, "every step applied by the trading projection", func() bool {
		code, out, _ = cli(t, "audit", "--login", "1001", "--client-order-id", "audit-cli-1", "--json")
		return code == 0 && !strings.Contains(out, `"applied":false`)
	})
	var story struct {
		Complete bool   `json:"complete"`
		Tag      string `json:"tag"`
		Attempts []struct {
			Appended struct {
				Applied *bool `json:"applied"`
			} `json:"appended"`
		} `json:"attempts"`
		ReadModel struct {
			Status string `json:"status"`
		} `json:"readModel"`
	}
	if err := json.Unmarshal([]byte(out), &story); err != nil {
		t.Fatalf("audit --json printed %q: %v", out, err)
	}
	if !story.Complete || len(story.Tag) != 7 || len(story.Attempts) != 1 || story.Attempts[0].Appended.Applied == nil ||
		!*story.Attempts[0].Appended.Applied || story.ReadModel.Status != "FILLED" {
		t.Errorf("audit --json: %s", out)
	}
	if code, _, errOut := cli(t, "audit", "--login", "1001", "--client-order-id", "no-such-order"); code != 1 ||
		!strings.Contains(errOut, "no operation") {
		t.Errorf("audit of an unknown order: exit %d, %q", code, errOut)
	}

	code, out, errOut = cli(t, "replay", "--verify")
	if code != 0 {
		t.Fatalf("replay --verify: exit %d\n%s\n%s", code, out, errOut)
	}
	var rep struct {
		Equal         bool   `json:"equal"`
		PositionsFrom string `json:"positionsFrom"`
		EventsApplied int    `json:"eventsApplied"`
		Tables        []struct {
			Table          string `json:"table"`
			Live, Replayed int
		} `json:"tables"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("replay --verify printed %q: %v", out, err)
	}
	if !rep.Equal || rep.EventsApplied == 0 || len(rep.Tables) != 5 || rep.PositionsFrom == "" {
		t.Fatalf("replay --verify: %s", out)
	}
	for _, tb := range rep.Tables {
		if tb.Table != "rm.account_balances" && tb.Live == 0 {
			t.Errorf("%s is empty on the live side: %s", tb.Table, out)
		}
	}

	// A corrupted live row is found and named.
	if _, err := svc.PG.Exec(ctx, `UPDATE rm.deals SET price = price + 1 WHERE deal_id = $1`, dealID); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli(t, "replay", "--verify")
	if code != 1 || !strings.Contains(errOut, fmt.Sprintf("rm.deals deal_id=%d: price live", dealID)) ||
		!strings.Contains(out, `"equal":false`) {
		t.Fatalf("replay --verify over a corrupted row: exit %d\n%s\n%s", code, out, errOut)
	}
}
