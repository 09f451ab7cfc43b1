package projections

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"tradesvc/infra/testenv"
	"tradesvc/query"
)

// loginsApart returns two logins whose events are in different partitions of the trading
// topics.
func loginsApart(t *testing.T) (a, b int64) {
	t.Helper()
	a = 1001
	for b = 1002; b < 2000; b++ {
		if loginPartition(b) != loginPartition(a) {
			return a, b
		}
	}
	t.Fatal("no two logins in different partitions")
	return 0, 0
}

// only is the scope of one login.
func only(login int64) query.Scope {
	return query.Scope{Match: func(l int64) bool { return l == login }, Logins: func() []int64 { return []int64{login} }}
}

// endsWith waits up to within for s to end and checks why.
func endsWith(t *testing.T, s query.Subscription, within time.Duration, want error) {
	t.Helper()
	select {
	case <-s.Done():
		if !errors.Is(s.Err(), want) {
			t.Fatalf("ended with %v, want %v", s.Err(), want)
		}
	case <-time.After(within):
		t.Fatalf("not ended within %s (want %v)", within, want)
	}
}

// lives checks that s is still running after d.
func lives(t *testing.T, s query.Subscription, d time.Duration) {
	t.Helper()
	select {
	case <-s.Done():
		t.Fatalf("ended: %v", s.Err())
	case <-time.After(d):
	}
}

// The lag check reads rm.intake with every poll: a partition whose trading projection has
// lagged past MaxLag ends the subscriptions of its logins and no other; a relay lagging ends
// every one, including one made while it lags; a component whose report went stale counts as
// lagging since that report; once the reports say caught up, subscriptions live again.
func TestChangeFeedEndsTheSubscriptionsOfLoginsWhoseIntakeLags(t *testing.T) {
	e := cfSetup(t, func(c *ChangeFeedConfig) { c.MaxLag = time.Second })
	a, b := loginsApart(t)
	pa, pb := loginPartition(a), loginPartition(b)
	// The components report every 200ms what the test sets, as long as it does not stop them.
	var mu sync.Mutex
	state := map[string][]IntakePart{IntakeTrading: {{Part: pa}, {Part: pb}}, IntakeRelay: {{Part: AllPartitions}}}
	report := func(source string, parts ...IntakePart) {
		t.Helper()
		mu.Lock()
		state[source] = parts
		mu.Unlock()
		if err := ReportIntake(e.ctx, e.pool, source, parts); err != nil {
			t.Fatal(err)
		}
	}
	testenv.Background(t, e.ctx, 5*time.Second, func(ctx context.Context) error {
		for ctx.Err() == nil {
			mu.Lock()
			for source, parts := range state {
				if err := ReportIntake(ctx, e.pool, source, parts); err != nil && ctx.Err() == nil {
					mu.Unlock()
					return err
				}
			}
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
		return nil
	})
	report(IntakeRelay, IntakePart{Part: AllPartitions})
	subA, subB := e.feed.Subscribe(only(a), 10), e.feed.Subscribe(only(b), 10)
	every := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 10) // Logins nil: every login
	defer subB.Close()
	lives(t, every, 1500*time.Millisecond)

	report(IntakeTrading, IntakePart{Part: pa, Behind: 2 * time.Second}, IntakePart{Part: pb})
	endsWith(t, subA, 2*time.Second, ErrIntakeLagged)
	endsWith(t, every, time.Second, ErrIntakeLagged)
	lives(t, subB, time.Second)
	if err := subA.Err(); !errors.Is(err, ErrLagged) {
		t.Fatalf("%v does not wrap ErrLagged (the streams close 1011 on it)", err)
	}

	report(IntakeTrading, IntakePart{Part: pa}, IntakePart{Part: pb})
	report(IntakeRelay, IntakePart{Part: AllPartitions, Behind: 3 * time.Second})
	endsWith(t, subB, 2*time.Second, ErrIntakeLagged)
	late := e.feed.Subscribe(only(a), 10) // made while the relay lags: ended at once
	endsWith(t, late, time.Second, ErrIntakeLagged)

	report(IntakeRelay, IntakePart{Part: AllPartitions})
	time.Sleep(300 * time.Millisecond) // a poll reads it
	subA, subB = e.feed.Subscribe(only(a), 10), e.feed.Subscribe(only(b), 10)
	defer subA.Close()
	lives(t, subB, 1500*time.Millisecond)
	// The projector of partition pb stops reporting: 10 s ago is stale.
	report(IntakeTrading, IntakePart{Part: pa})
	if _, err := e.pool.Exec(e.ctx, `UPDATE rm.intake SET reported_at = now() - interval '10 seconds'
		WHERE source = $1 AND part = $2`, IntakeTrading, pb); err != nil {
		t.Fatal(err)
	}
	endsWith(t, subB, 2*time.Second, ErrIntakeLagged)
	lives(t, subA, time.Second)
}

// A feed that cannot reach Postgres for longer than MaxLag ends every subscription; once it
// is back, a new one is delivered to.
func TestChangeFeedDownPastMaxLagEndsEverySubscription(t *testing.T) {
	e := cfSetup(t, func(c *ChangeFeedConfig) { c.MaxLag = time.Second })
	// Connections to the test's database are refused from another database (Postgres does
	// not let a session refuse its own).
	admin, err := pgx.Connect(e.ctx, testenv.PG(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(e.ctx)
	db := pgx.Identifier{e.pool.Config().ConnConfig.Database}.Sanitize()
	sub := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 10)
	if _, err := admin.Exec(e.ctx, `ALTER DATABASE `+db+` ALLOW_CONNECTIONS false`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(e.ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = $2`, cfAppName, e.pool.Config().ConnConfig.Database); err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	endsWith(t, sub, 3*time.Second, ErrIntakeLagged)
	if d := time.Since(cut); d < time.Second {
		t.Fatalf("ended %s after the cut, before MaxLag", d)
	}
	if _, err := admin.Exec(e.ctx, `ALTER DATABASE `+db+` ALLOW_CONNECTIONS true`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for live, _, _ := e.feed.Status(); !live; live, _, _ = e.feed.Status() {
		if time.Now().After(deadline) {
			t.Fatal("the feed did not reconnect")
		}
		time.Sleep(50 * time.Millisecond)
	}
	again := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 10)
	defer again.Close()
	e.write(row(9, query.ChangeDeal, ""))
	if c := next(t, again); c.Login != 9 {
		t.Fatalf("after the feed came back: %+v", c)
	}
}

// Rows pruned before the feed read them (it was down longer than the retention) are never
// skipped silently: the subscriptions of their partition's logins end with ErrChangesLost,
// others go on, and the feed goes on past them (it does not stall on the gap): a head that
// moved past rows gone, and a page that starts after a gap, alike.
func TestChangeFeedGoesPastPrunedRowsAndEndsTheirSubscriptions(t *testing.T) {
	e := cfSetup(t)
	a, b := loginsApart(t)
	pa := loginPartition(a)
	// writePruned commits rows of login a in partition pa, pruned of them deleted in the same
	// transaction and then kept more: as if they had been written while the feed was down
	// and the first pruned since.
	writePruned := func(pruned, kept int) {
		t.Helper()
		rowsOf := func(n int) []changeRow {
			rows := make([]changeRow, n)
			for i := range rows {
				rows[i] = row(a, query.ChangeDeal, "")
			}
			return rows
		}
		err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
			batch := &pgx.Batch{}
			queueChangeRows(batch, pa, rowsOf(pruned))
			batch.Queue(`DELETE FROM rm.changes WHERE part = $1`, pa)
			if kept > 0 {
				queueChangeRows(batch, pa, rowsOf(kept))
			}
			return tx.SendBatch(e.ctx, batch).Close()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	subA, subB := e.feed.Subscribe(only(a), 10), e.feed.Subscribe(only(b), 10)
	defer subB.Close()
	writePruned(2, 0) // the head moved, its rows are gone
	endsWith(t, subA, 3*time.Second, ErrChangesLost)
	lives(t, subB, 300*time.Millisecond)

	subA = e.feed.Subscribe(only(a), 10)
	writePruned(1, 1) // the page read starts after a gap
	endsWith(t, subA, 3*time.Second, ErrChangesLost)

	subA = e.feed.Subscribe(only(a), 10)
	defer subA.Close()
	e.writePart(pa, true, row(a, query.ChangeDeal, ""))
	if c := next(t, subA); c.Login != a || c.Part != pa {
		t.Fatalf("after the pruned rows: %+v", c)
	}
	lives(t, subB, 100*time.Millisecond)
}
