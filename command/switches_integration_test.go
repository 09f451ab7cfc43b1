package command_test

import (
	"context"
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
	if err := s.Heartbeat(ctx, "executor-a"); err != nil {
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
	if err := s.Heartbeat(ctx, "executor-b"); err != nil {
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
