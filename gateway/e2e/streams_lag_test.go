package e2e_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"github.com/fasthttp/websocket"
	"github.com/jackc/pgx/v5"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events/dec"
	"tradesvc/infra/keys"
	"tradesvc/infra/testenv"
)

// Close reasons of a user stream that fell behind (code 1011), docs/streams.md.
const (
	reasonIntakeLagging = "service intake lagging; reconnect and resnapshot"
	reasonChangesLost   = "changes were lost; reconnect and resnapshot"
)

// lagWithin bounds how long after its intake starts to lag a user stream is closed: the
// bound (--user-stream-max-lag, 5 s) plus the detection (a report a second, the gateway's
// poll, its check), with slack for a busy machine.
const lagWithin = 12 * time.Second

// A user stream is closed with 1011 when the service's own intake lags for its logins,
// instead of going silent: the trading projection stuck behind the log, the gateway's change
// feed cut from Postgres, a feed down longer than the change-row retention (it never resumes
// past rows it did not send), and the relay cut from the trade server. The roles run as three
// processes (the simulator; the executor, the relay and the projector; the gateway), so the gateway
// hears of the projection's commits only through Postgres, as a gateway of a split
// deployment does. On the code before the intake reports every case fails: the stream stays
// open and silent (and after the pruned rows the feed never delivered again).
func TestUserStreamClosesWhenTheIntakeLags(t *testing.T) {
	vars := apptest.Vars(t)
	vars["TRADESVC_LISTEN_KEY_LIFETIME"] = testListenKeyLifetime.String()
	vars["TRADESVC_USER_STREAM_RECHECK"] = "500ms"
	vars["TRADESVC_CHANGE_RETENTION"] = "500ms"
	simProc, simAddr := apptest.LaunchSim(t, vars)
	core := maps.Clone(vars)
	core["TRADESVC_ROLES"] = "executor,relay,projector"
	core["TRADESVC_SIM_ADDR"] = simAddr
	apptest.Launch(t, core)
	gw := maps.Clone(vars)
	gw["TRADESVC_ROLES"] = "gateway"
	svc := apptest.Serve(t, apptest.Launch(t, gw))
	svc.WaitForSymbols(t, 60*time.Second, "BTCUSD")
	svc.WaitForAccount(t, 60*time.Second, loginReal1)
	e := &env{svc: svc}
	k := svc.CreateKeyWithLimits(t, keys.CreateParams{Logins: []int64{loginReal1, loginReal2},
		Limits: keys.Limits{WeightPerMinute: 1 << 30, Orders10s: 1 << 30, Orders1m: 1 << 30}})
	ctx := context.Background()
	deposit := func(t *testing.T, amount string) string {
		t.Helper()
		if _, err := simProc.App.Sim().Deposit(loginReal1, dec.MustParse(amount)); err != nil {
			t.Fatalf("deposit: %v", err)
		}
		accs, err := simProc.App.Sim().Accounts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range accs {
			if a.Login == loginReal1 {
				return dec.String(a.Balance)
			}
		}
		t.Fatal("login 1001 not on the trade server")
		return ""
	}
	balanceIs := func(b string) func(map[string]json.RawMessage) bool {
		return func(m map[string]json.RawMessage) bool { return cmpDec(str(m, "b"), b) == 0 }
	}
	// working opens a stream that delivers, once the intake is known to be caught up again: a
	// probe stream must stay open for longer than a report and a poll take (until then the
	// gateway may still hold the last report of the outage and close new streams at once).
	working := func(t *testing.T) *wsClient {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if time.Now().After(deadline) {
				t.Fatal("no user stream delivers 30 s after the outage ended")
			}
			probe, _ := e.userStream(t, k)
			_ = probe.ws.SetReadDeadline(time.Now().Add(2500 * time.Millisecond))
			_, _, err := probe.ws.ReadMessage()
			probe.ws.Close()
			if _, closed := err.(*websocket.CloseError); closed || err == nil {
				continue
			}
			c, _ := e.userStream(t, k)
			c.event("ACCOUNT_UPDATE", loginReal1, balanceIs(deposit(t, "1")))
			return c
		}
	}
	lagClose := func(t *testing.T, c *wsClient, want string) time.Duration {
		t.Helper()
		start := time.Now()
		code, reason, _ := c.closed(lagWithin)
		if code != websocket.CloseInternalServerErr || reason != want {
			t.Fatalf("the stream closed %d %q, want 1011 %q", code, reason, want)
		}
		return time.Since(start)
	}
	// The test's database refuses new connections (from another database: Postgres does not
	// let a session refuse its own) and the gateway's change feed is cut; the pools keep the
	// connections they have.
	admin, err := pgx.Connect(ctx, testenv.PG(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	db := svc.PG.Config().ConnConfig.Database
	allowConnections := func(t *testing.T, allow bool) {
		t.Helper()
		if _, err := admin.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` ALLOW_CONNECTIONS `+
			map[bool]string{true: "true", false: "false"}[allow]); err != nil {
			t.Fatal(err)
		}
		if allow {
			return
		}
		var n int
		if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = 'tradesvc-changefeed' AND datname = $1`, db).Scan(&n); err != nil || n != 1 {
			t.Fatalf("cut %d change feeds (%v), want the gateway's one", n, err)
		}
	}
	t.Cleanup(func() { allowConnections(t, true) })

	t.Run("the trading projection stuck behind the log", func(t *testing.T) {
		c := working(t)
		// The projection takes each login's advisory lock in its transactions: holding
		// 1001's keeps the transaction that applies the deposit waiting, and the projector
		// consuming nothing more.
		lock, err := svc.PG.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Release()
		if _, err := lock.Exec(ctx, `SELECT pg_advisory_lock($1::bigint)`, loginReal1); err != nil {
			t.Fatal(err)
		}
		locked := true
		defer func() {
			if locked {
				_, _ = lock.Exec(ctx, `SELECT pg_advisory_unlock($1::bigint)`, loginReal1)
			}
		}()
		deposit(t, "1")
		if took := lagClose(t, c, reasonIntakeLagging); took < 4*time.Second {
			t.Errorf("closed %s after the projection stopped, before the 5 s bound", took)
		}
		if _, err := lock.Exec(ctx, `SELECT pg_advisory_unlock($1::bigint)`, loginReal1); err != nil {
			t.Fatal(err)
		}
		locked = false
		working(t)
	})

	t.Run("the change feed cut from Postgres", func(t *testing.T) {
		c := working(t)
		allowConnections(t, false)
		defer allowConnections(t, true)
		took := lagClose(t, c, reasonIntakeLagging)
		allowConnections(t, true)
		if took < 4*time.Second {
			t.Errorf("closed %s after the feed was cut, before the 5 s bound", took)
		}
		working(t)
	})

	t.Run("a feed down longer than the change-row retention", func(t *testing.T) {
		c := working(t)
		allowConnections(t, false)
		defer allowConnections(t, true)
		deposit(t, "1")                    // its rows are committed while the feed is down
		time.Sleep(800 * time.Millisecond) // older than the 500 ms retention
		deposit(t, "1")                    // its commit prunes the first one's rows
		allowConnections(t, true)          // the feed is back within the 5 s bound
		lagClose(t, c, reasonChangesLost)
		working(t)
	})

	t.Run("the relay cut from the trade server", func(t *testing.T) {
		c := working(t)
		simProc.Stop(t)
		if took := lagClose(t, c, reasonIntakeLagging); took < 4*time.Second {
			t.Errorf("closed %s after the relay was cut, before the 5 s bound", took)
		}
	})
}
