package command_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/command"
	"tradesvc/infra/testenv"
)

func swPool(t *testing.T) (context.Context, *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx, testenv.MigratedPG(t)
}

func swNew(t *testing.T, pool *pgxpool.Pool, now func() time.Time) *command.Switches {
	t.Helper()
	s, err := command.NewSwitches(pool, now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Trading is on in a freshly migrated database; switching it off is seen at once by the
// instance that wrote it (its cache is reset) and by another instance once its one-second
// cache expires, not before; switching it back on works the same way.
func TestSwitchesTradingOffIsSeenWithinTheCacheSecond(t *testing.T) {
	ctx, pool := swPool(t)
	writer := swNew(t, pool, time.Now)
	clk := testenv.NewClock(time.Now())
	reader := swNew(t, pool, clk.Now)

	if !writer.TradingEnabled(ctx) || !reader.TradingEnabled(ctx) {
		t.Fatal("trading is off in a freshly migrated database; the default is on")
	}
	if err := writer.SetTrading(ctx, false); err != nil {
		t.Fatal(err)
	}
	if writer.TradingEnabled(ctx) {
		t.Error("the instance that switched trading off still says it is on")
	}
	// The other instance answers from its cache until the second is up...
	clk.Add(500 * time.Millisecond)
	if !reader.TradingEnabled(ctx) {
		t.Error("another instance re-read the switch before its one-second cache expired")
	}
	// ...and sees the switch once it is.
	clk.Add(600 * time.Millisecond)
	if reader.TradingEnabled(ctx) {
		t.Error("another instance still says trading is on more than a second after it was switched off")
	}
	// A third instance with the real clock sees it within about a second.
	third := swNew(t, pool, time.Now)
	deadline := time.Now().Add(3 * time.Second)
	for third.TradingEnabled(ctx) {
		if time.Now().After(deadline) {
			t.Fatal("a new instance still says trading is on 3s after it was switched off")
		}
		time.Sleep(50 * time.Millisecond)
	}

	if err := writer.SetTrading(ctx, true); err != nil {
		t.Fatal(err)
	}
	if !writer.TradingEnabled(ctx) {
		t.Error("the instance that switched trading on still says it is off")
	}
	clk.Add(1100 * time.Millisecond)
	if !reader.TradingEnabled(ctx) {
		t.Error("another instance still says trading is off a second after it was switched on")
	}
	var value string
	if err := pool.QueryRow(ctx, `SELECT value FROM cmd.switches WHERE name = 'trading'`).Scan(&value); err != nil || value != "on" {
		t.Errorf("cmd.switches trading = %q, %v; want on", value, err)
	}
}

// The executor is dead with no heartbeat, alive after one, and dead again once the newest
// heartbeat is older than ExecutorTimeout.
func TestSwitchesExecutorAliveFollowsHeartbeats(t *testing.T) {
	ctx, pool := swPool(t)
	clk := testenv.NewClock(time.Now())
	s := swNew(t, pool, clk.Now)

	if s.ExecutorAlive(ctx) {
		t.Fatal("executor alive with no heartbeat ever recorded")
	}
	if err := s.Heartbeat(ctx, "executor-a", true); err != nil {
		t.Fatal(err)
	}
	clk.Add(1100 * time.Millisecond) // past the cache second
	if !s.ExecutorAlive(ctx) {
		t.Fatal("executor not alive right after a heartbeat")
	}
	if !s.TradingEnabled(ctx) {
		t.Error("trading off after a heartbeat")
	}

	// The heartbeat ages past the timeout (seen_at moved back instead of waiting 30s).
	if _, err := pool.Exec(ctx, `UPDATE cmd.executor_heartbeats SET seen_at = now() - $1::interval`,
		(command.ExecutorTimeout + 2*time.Second).String()); err != nil {
		t.Fatal(err)
	}
	if !s.ExecutorAlive(ctx) {
		t.Error("the cached answer changed before the cache second was up")
	}
	clk.Add(1100 * time.Millisecond)
	if s.ExecutorAlive(ctx) {
		t.Fatalf("executor alive with its newest heartbeat older than %s", command.ExecutorTimeout)
	}

	// A second instance beating brings it back: liveness is the newest heartbeat of any.
	if err := s.Heartbeat(ctx, "executor-b", true); err != nil {
		t.Fatal(err)
	}
	clk.Add(1100 * time.Millisecond)
	if !s.ExecutorAlive(ctx) {
		t.Error("executor not alive after another instance's heartbeat")
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM cmd.executor_heartbeats`).Scan(&n); err != nil || n != 2 {
		t.Errorf("%d heartbeat rows, %v; want one per instance (2)", n, err)
	}
}

// Issue 17 item 3: the execution path follows the trade-server link the executors record
// with their heartbeats, not only their liveness. An executor that runs but cannot reach the
// trade server leaves the path down (-5015); one live executor that reaches it is enough;
// a linked executor whose heartbeat is older than LinkTimeout no longer counts.
func TestSwitchesExecutionPathFollowsTheTradeServerLink(t *testing.T) {
	ctx, pool := swPool(t)
	clk := testenv.NewClock(time.Now())
	s := swNew(t, pool, clk.Now)

	if err := s.Heartbeat(ctx, "executor-a", false); err != nil {
		t.Fatal(err)
	}
	if !s.ExecutorAlive(ctx) || s.TradeServerLinked(ctx) || s.ExecutionPathUp(ctx) {
		t.Fatalf("alive %v linked %v path %v with the only executor's link down; want true false false",
			s.ExecutorAlive(ctx), s.TradeServerLinked(ctx), s.ExecutionPathUp(ctx))
	}
	if err := s.Heartbeat(ctx, "executor-a", true); err != nil {
		t.Fatal(err)
	}
	clk.Add(1100 * time.Millisecond)
	if !s.ExecutionPathUp(ctx) || !s.LastLinked() {
		t.Fatal("path down after the executor recorded its link up")
	}
	if err := s.Heartbeat(ctx, "executor-b", false); err != nil {
		t.Fatal(err)
	}
	clk.Add(1100 * time.Millisecond)
	if !s.ExecutionPathUp(ctx) {
		t.Error("path down while one live executor reaches the trade server")
	}
	// The linked executor is killed: its last heartbeat stops being renewed. Once it is
	// older than LinkTimeout its "up" no longer counts, although it is well inside
	// ExecutorTimeout (the split run's disconnect soon after an executor restart was answered
	// ACCEPTED, not -5015, while the dead instance's last "up" counted).
	age := func(d time.Duration) {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE cmd.executor_heartbeats SET seen_at = now() - $1::interval WHERE instance_id = 'executor-a'`,
			d.String()); err != nil {
			t.Fatal(err)
		}
		clk.Add(1100 * time.Millisecond)
	}
	age(command.LinkTimeout - 2*time.Second)
	if !s.ExecutionPathUp(ctx) {
		t.Error("path down while the linked executor's heartbeat is newer than LinkTimeout")
	}
	age(command.LinkTimeout + time.Second)
	if command.LinkTimeout+time.Second >= command.ExecutorTimeout {
		t.Fatalf("LinkTimeout %s not well inside ExecutorTimeout %s", command.LinkTimeout, command.ExecutorTimeout)
	}
	if s.ExecutionPathUp(ctx) || s.TradeServerLinked(ctx) || !s.ExecutorAlive(ctx) {
		t.Errorf("path up %v, linked %v, alive %v with the linked executor's last heartbeat %s old; want false false true",
			s.ExecutionPathUp(ctx), s.TradeServerLinked(ctx), s.ExecutorAlive(ctx), command.LinkTimeout+time.Second)
	}
	// Its heartbeat ages out altogether: the unlinked one stays alive.
	age(command.ExecutorTimeout + 2*time.Second)
	if s.ExecutionPathUp(ctx) || !s.ExecutorAlive(ctx) {
		t.Errorf("path up %v, alive %v with only an unlinked executor alive; want false true", s.ExecutionPathUp(ctx), s.ExecutorAlive(ctx))
	}
}

// Regression: refresh held the switches' lock across its query and dropped the query's
// error. A hanging database must not block callers that hold a reading, and a failing one
// is reported (Err) while the last reading keeps being served; it recovers by itself.
func TestSwitchesUnreadableDatabaseIsReportedAndNeverBlocksCachedAnswers(t *testing.T) {
	ctx, direct := swPool(t)
	u, err := url.Parse(direct.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	u.Host = proxy.Addr()
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	clk := testenv.NewClock(time.Now())
	s := swNew(t, pool, clk.Now)
	if !s.TradingEnabled(ctx) || s.Err() != nil {
		t.Fatalf("first reading: trading %v, err %v", s.TradingEnabled(ctx), s.Err())
	}

	// The database hangs: the caller whose turn it is to refresh waits on it...
	proxy.Stall()
	clk.Add(2 * time.Second)
	hung, cancel := context.WithCancel(ctx)
	defer cancel()
	first := make(chan bool, 1)
	go func() { first <- s.TradingEnabled(hung) }()
	apptestEventually(t, "a refresh in flight", s.Refreshing)
	// ...while every other caller is answered from the last reading, before that query ends.
	second := make(chan bool, 1)
	go func() { second <- s.TradingEnabled(ctx) }()
	select {
	case on := <-second:
		if !on {
			t.Error("a caller during the hung refresh was not answered from the last reading (trading on)")
		}
	case <-first:
		t.Fatal("the hung refresh ended before the test released it")
	case <-time.After(20 * time.Second):
		t.Fatal("a caller blocked behind the hung refresh: the lock is held across the query")
	}
	cancel()
	if on := <-first; !on {
		t.Error("the refreshing caller lost the last reading when its query failed")
	}
	if s.Err() == nil {
		t.Error("a failed refresh left Err nil")
	}

	// The database refuses connections: still the last reading, and the error is kept.
	proxy.Cut()
	clk.Add(2 * time.Second)
	if !s.TradingEnabled(ctx) {
		t.Error("trading off while the database is unreachable; want the last reading (on)")
	}
	if s.Err() == nil {
		t.Error("an unreachable database left Err nil")
	}

	// It comes back: the next refresh after the retry pause succeeds and clears the error.
	proxy.Restore()
	clk.Add(2 * time.Second)
	if !s.TradingEnabled(ctx) || s.Err() != nil {
		t.Errorf("after recovery: trading %v, err %v", s.TradingEnabled(ctx), s.Err())
	}
}

// A process that never read the switches fails closed while the database is unreachable.
func TestSwitchesNeverReadFailClosed(t *testing.T) {
	ctx, direct := swPool(t)
	u, err := url.Parse(direct.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	proxy := testenv.NewProxy(t, u.Host)
	proxy.Cut()
	u.Host = proxy.Addr()
	pool, err := pgxpool.New(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := swNew(t, pool, time.Now)
	if s.TradingEnabled(ctx) || s.ExecutorAlive(ctx) {
		t.Error("a process that never read the switches says trading is on or the executor alive")
	}
	if s.Err() == nil {
		t.Error("Err is nil although no reading ever succeeded")
	}
}

func apptestEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
