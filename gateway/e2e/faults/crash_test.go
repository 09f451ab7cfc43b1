//go:build faults

package faults

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"strconv"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/gateway/gwclient"
)

// Postgres is killed with SIGKILL (the postmaster and every backend) while clients place
// orders with ACK and RESULT and retry each with the same id until it is acknowledged (flow);
// it is started again (crash recovery) 3 s later while they go on. Every acknowledged order
// ends FILLED with its deal and position in the read models, none traded twice, and the read
// models equal the ones rebuilt from the log (checkExactlyOnce). Postgres is started again in
// t.Cleanup whatever happens. Run it alone under the exclusive lock:
//
//	flock -x /work/notes/services.lock go test -tags faults -run TestPostgresKilled ./gateway/e2e/faults/
//
// Checked to fail: with the trading projection's transactions asynchronous (SET LOCAL
// synchronous_commit = off) and its positions left to Kafka's committed offsets (no
// rm.projection_offsets: the finding), acknowledged orders were still not FILLED 2
// minutes after the kill. It also found two bugs: two outcomes of one operation in one
// transaction (the executor's and the reconciled copy a redelivered command makes) lost the
// outcome, and 13 operations differed from the rebuild from the log (fixed in
// projections/trading_derive.go, queueLoadOperations); and once an acknowledged ACK order
// went IN_DOUBT and then REJECTED "did not execute" although nothing had sent it: the
// executor's claim had committed as Postgres died, and its retry took the row for another
// executor's send (fixed in command/executor/executions.go, ownClaims).
func TestPostgresKilledWhileOrdersFlowLosesNothing(t *testing.T) {
	k := startForPostgresKill(t)
	flow := startFlow(t, []*gwclient.Client{k.c}, k.logins, "pgkill", 6, 5*time.Millisecond)
	time.Sleep(3 * time.Second)
	killPostgres9(t, k.dir, k.port)
	time.Sleep(3 * time.Second)
	startPostgres(t, k.dir, k.port)
	time.Sleep(3 * time.Second)
	checkExactlyOnce(t, k.svc, k.svc.App.Sim(), k.logins, k.before, flow)
}

// postgresKill is a service on the shared test servers, ready to trade on two funded logins,
// for a test that kills the test Postgres.
type postgresKill struct {
	dir, port string
	svc       *apptest.Service
	c         *gwclient.Client
	logins    []int64
	before    int // positions the trade server held for the logins
}

// startForPostgresKill starts it; Postgres is started again in t.Cleanup whatever happens.
func startForPostgresKill(t *testing.T) *postgresKill {
	k := &postgresKill{dir: testRunDir(t), port: pgPort(t), logins: []int64{1001, 1002}}
	t.Cleanup(func() { startPostgres(t, k.dir, k.port) }) // idempotent: leaves Postgres running
	k.svc = apptest.Serve(t, apptest.Launch(t, apptest.Vars(t)))
	k.c = readyToTrade(t, k.svc)
	waitTradable(t, k.c)
	k.before = fundAndCount(t, k.svc.App.Sim(), k.logins)
	return k
}

// Postgres is killed with SIGKILL a moment after RESULT answers, and no order follows them.
// The trading projection commits asynchronously (its answers wait for its commit, not for
// the disk), so the crash may take back its last commits, and no later message comes to
// their partitions to show it. Every acknowledged order still ends FILLED with its deal and
// position, and the read models equal the rebuild from the log: the projection finds the
// stored positions behind those it committed (Positions.Watch) and applies again what the
// crash took back. The test logs how many of the orders the restarted Postgres held at
// first. Run it alone under the exclusive lock, as TestPostgresKilledWhileOrdersFlowLosesNothing.
//
// Checked to fail: with Positions.Watch doing nothing, the restarted Postgres held 9 of the
// 10 orders and the tenth never came back (after 2 minutes 9 of 10 FILLED, "no row"); the
// same with Watch but without the projection forgetting, at a session's start, what it
// remembered of its commits (Positions.OnLoad): the outcome applied again was taken for a
// copy of itself and skipped.
func TestPostgresKilledRightAfterAnswersLosesNothing(t *testing.T) {
	k := startForPostgresKill(t)
	svc, logins := k.svc, k.logins
	f := startFlow(t, []*gwclient.Client{k.c}, logins, "pgidle", 0, 0) // no workers: the orders are placed here
	ids := make([]string, 10)
	for i := range ids {
		o := &flowOrder{id: fmt.Sprintf("pgidle-%d", i), login: logins[i%len(logins)], seen: map[string]time.Time{}}
		ids[i] = o.id
		f.mu.Lock()
		f.orders = append(f.orders, o)
		f.mu.Unlock()
		p := url.Values{"login": {strconv.FormatInt(o.login, 10)}, "symbol": {"BTCUSD"}, "type": {"MARKET"},
			"side": {"BUY"}, "volume": {"0.01"}, "newClientOrderId": {o.id}, "newOrderRespType": {"RESULT"}}
		if !f.place(o, p, 0) || o.answer != "FILLED" {
			t.Fatalf("order %s: %s", o.id, f.history(o.id))
		}
	}
	killPostgres9(t, k.dir, k.port)
	startPostgres(t, k.dir, k.port)
	ctx := context.Background()
	apptest.Eventually(t, 30*time.Second, "Postgres answers", func() bool {
		var held int
		if err := svc.PG.QueryRow(ctx, `SELECT count(*) FROM rm.operations WHERE client_order_id = ANY($1) AND status = 'FILLED'`,
			ids).Scan(&held); err != nil {
			return false
		}
		t.Logf("the restarted Postgres held %d of the %d orders FILLED at first", held, len(ids))
		return true
	})
	checkExactlyOnce(t, svc, svc.App.Sim(), logins, k.before, f)
}

// The projector runs in its own process and is killed with SIGKILL twice while clients place
// orders (flow: fifteen to twenty a second, each a few projection transactions, so a kill
// may well land inside one), each time started again 2 s later: every acknowledged order ends
// FILLED, nothing is doubled, and the read models equal the ones rebuilt from the log, as
// with Postgres killed.
//
// Checked to fail: with the projection's positions written in a transaction of their own,
// committed before its writes (not atomically with them), a kill between the two lost the
// outcomes of two orders: the read models differed from the rebuild from the log (their
// deals, which the relay appends too, still made them FILLED).
func TestProjectorKilledMidBatchLosesNothing(t *testing.T) {
	vars := apptest.Vars(t)
	projVars := maps.Clone(vars)
	projVars["TRADESVC_ROLES"] = "projector"
	svcVars := maps.Clone(vars)
	svcVars["TRADESVC_ROLES"] = "gateway,executor,relay,sim"
	svc := apptest.Serve(t, apptest.Launch(t, svcVars))
	projector := child(t, projVars) // after the service: killed before its cleanup deletes the groups
	c := readyToTrade(t, svc)
	waitTradable(t, c)
	logins := []int64{1001, 1002}
	before := fundAndCount(t, svc.App.Sim(), logins)

	flow := startFlow(t, []*gwclient.Client{c}, logins, "projkill", 6, 5*time.Millisecond)
	for range 2 {
		time.Sleep(3 * time.Second)
		kill9(t, projector)
		time.Sleep(2 * time.Second)
		projector = child(t, projVars)
	}
	time.Sleep(3 * time.Second)
	checkExactlyOnce(t, svc, svc.App.Sim(), logins, before, flow)
}
