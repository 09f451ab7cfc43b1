package projections

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/infra/testenv"
	"tradesvc/query"
)

// cfEnv is a change feed reading a fresh database, and a writer that commits rows the way
// the trading projection does (change-feed lock, insert, NOTIFY, one transaction).
type cfEnv struct {
	t    *testing.T
	ctx  context.Context
	pool *pgxpool.Pool
	feed *ChangeFeed
	stop func()
}

const cfAppName = "changefeed_test"

func cfSetup(t *testing.T) *cfEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &cfEnv{t: t, ctx: ctx, pool: testenv.MigratedPG(t)}
	// The writer commits a few rows before the feed starts: history the feed must not replay.
	e.write(row(1, query.ChangeDeal, ""), row(2, query.ChangeDeal, ""))
	feed, err := NewChangeFeed(ChangeFeedConfig{ConnString: e.pool.Config().ConnString() + "&application_name=" + cfAppName,
		Logger: testenv.Logger(), Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e.feed = feed
	e.stop = testenv.Background(t, ctx, 10*time.Second, feed.Run)
	select {
	case <-feed.Ready():
	case <-ctx.Done():
		t.Fatal("the change feed never took its position")
	}
	return e
}

func row(login int64, kind, operationID string) changeRow {
	ev := fmt.Sprintf(`{"login":%d,"seq":77}`, login) // a fact (any of the four decodes it)
	if kind == query.ChangeOperation {
		ev = `{"status":"FILLED","version":1,"answered":true}`
	}
	return changeRow{login: login, kind: kind, operationID: operationID, event: []byte(ev)}
}

// write commits rows in one transaction, as the projection does; notify false leaves the
// feed to its poll.
func (e *cfEnv) write(rows ...changeRow) { e.t.Helper(); e.writeNotify(true, rows...) }

func (e *cfEnv) writeNotify(notify bool, rows ...changeRow) {
	e.t.Helper()
	err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue("SELECT pg_advisory_xact_lock($1, $2)", changeFeedLockClass, changeFeedLockID)
		for _, r := range rows {
			b.Queue(`INSERT INTO rm.changes (login, kind, operation_id, event) VALUES ($1, $2, $3, $4)`,
				r.login, r.kind, nullText(r.operationID), r.event)
		}
		if notify {
			b.Queue("SELECT pg_notify($1, '')", ChangesChannel)
		}
		return tx.SendBatch(e.ctx, b).Close()
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// next receives one change or fails after 10 s.
func next(t *testing.T, s query.Subscription) query.Change {
	t.Helper()
	select {
	case c := <-s.C():
		return c
	case <-s.Done():
		t.Fatalf("subscription ended: %v", s.Err())
	case <-time.After(10 * time.Second):
		t.Fatal("no change within 10s")
	}
	return query.Change{}
}

func TestChangeFeedDeliversLaterChangesInSeqOrderToMatchingSubscribers(t *testing.T) {
	e := cfSetup(t)
	ones := e.feed.Subscribe(func(login int64) bool { return login == 1 }, 5000)
	defer ones.Close()
	twos := e.feed.Subscribe(func(login int64) bool { return login == 2 }, 5000)
	defer twos.Close()
	e.write(row(1, query.ChangeOrderUpdate, "op-a"), row(2, query.ChangeDeal, ""), row(1, query.ChangeOperation, "op-a"),
		row(1, query.ChangePositionUpdate, ""))
	e.writeNotify(false, row(1, query.ChangeAccountUpdate, "")) // no NOTIFY: the poll finds it
	var got []string
	var last int64
	for i := 0; i < 3; i++ {
		c := next(t, ones)
		if c.Login != 1 || c.Seq <= last || c.Seq <= 2 {
			t.Fatalf("change %d: %+v (previous seq %d)", i, c, last)
		}
		last = c.Seq
		got = append(got, c.Kind)
	}
	if fmt.Sprint(got) != "[ORDER_UPDATE POSITION_UPDATE ACCOUNT_UPDATE]" {
		t.Fatalf("login 1 got %v (OPERATION rows are for waiters, history is not replayed)", got)
	}
	if c := next(t, twos); c.Kind != query.ChangeDeal || c.Login != 2 || c.Fact.(*events.DealAdded).Seq != 77 {
		t.Fatalf("login 2 got %+v", c)
	}

	// More rows than one catch-up page, in one transaction: every one, in order.
	const n = 2500
	rows := make([]changeRow, n)
	for i := range rows {
		rows[i] = row(1, query.ChangeDeal, "")
	}
	e.write(rows...)
	for i := 0; i < n; i++ {
		c := next(t, ones)
		if c.Seq != last+1 {
			t.Fatalf("row %d: seq %d after %d", i, c.Seq, last)
		}
		last = c.Seq
	}
}

func TestChangeFeedWakesOperationWatchers(t *testing.T) {
	e := cfSetup(t)
	a, stopA := e.feed.WatchOperation("op-a")
	b, stopB := e.feed.WatchOperation("op-b")
	// A DEAL row owned by op-a does not wake its waiters: only OPERATION rows carry answers.
	e.write(row(1, query.ChangeDeal, "op-a"), row(1, query.ChangeOperation, "op-b"))
	select {
	case <-b:
	case <-time.After(10 * time.Second):
		t.Fatal("op-b watcher not woken")
	}
	select {
	case <-a: // dispatched before op-b's row, so it would be pending by now
		t.Fatal("op-a watcher woken by a DEAL row")
	default:
	}
	// Nor does an OPERATION row of a state that answers nobody yet.
	unanswered := changeRow{login: 1, kind: query.ChangeOperation, operationID: "op-a",
		event: []byte(`{"status":"ACCEPTED","version":1,"answered":false}`)}
	e.write(unanswered, row(1, query.ChangeOperation, "op-b"))
	select {
	case <-b:
	case <-time.After(10 * time.Second):
		t.Fatal("op-b watcher not woken")
	}
	select {
	case <-a:
		t.Fatal("op-a watcher woken by an OPERATION row that answers nobody")
	default:
	}
	e.write(row(1, query.ChangeOperation, "op-b"), row(1, query.ChangeOperation, "op-a"), row(1, query.ChangeOperation, "op-a"))
	select {
	case <-a:
	case <-time.After(10 * time.Second):
		t.Fatal("op-a watcher not woken")
	}
	select {
	case <-b:
	default:
		t.Fatal("op-b watcher not woken (its change came first)")
	}
	stopA()
	stopB()
	stopB() // stopping twice is harmless
	e.feed.mu.Lock()
	left := len(e.feed.watchers)
	e.feed.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d watcher sets left after stop", left)
	}
}

func TestChangeFeedEndsALaggingSubscriptionWithErrLagged(t *testing.T) {
	e := cfSetup(t)
	slow := e.feed.Subscribe(func(int64) bool { return true }, 2)
	fast := e.feed.Subscribe(func(int64) bool { return true }, 100)
	defer fast.Close()
	e.write(row(1, query.ChangeDeal, ""), row(1, query.ChangeDeal, ""), row(1, query.ChangeDeal, ""), row(1, query.ChangeDeal, ""))
	select {
	case <-slow.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a subscriber that does not read was not ended")
	}
	if !errors.Is(slow.Err(), ErrLagged) {
		t.Fatalf("err %v, want ErrLagged", slow.Err())
	}
	if len(slow.C()) != 2 {
		t.Fatalf("the lagging subscription holds %d changes, want its full buffer of 2", len(slow.C()))
	}
	// Others are not held back by it.
	for i := 0; i < 4; i++ {
		next(t, fast)
	}
	slow.Close() // closing an ended subscription keeps its reason
	if !errors.Is(slow.Err(), ErrLagged) {
		t.Fatalf("err after Close %v", slow.Err())
	}
}

func TestChangeFeedReconnectsAndMissesNothing(t *testing.T) {
	e := cfSetup(t)
	sub := e.feed.Subscribe(func(int64) bool { return true }, 100)
	defer sub.Close()
	var killed int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database()`, cfAppName).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d feed connections (%v)", killed, err)
	}
	e.write(row(7, query.ChangeDeal, "")) // committed while the feed is disconnected
	if c := next(t, sub); c.Login != 7 {
		t.Fatalf("%+v", c)
	}
	e.write(row(8, query.ChangeDeal, ""))
	if c := next(t, sub); c.Login != 8 {
		t.Fatalf("%+v", c)
	}
}

func TestChangeFeedEndsSubscriptionsWhenItStops(t *testing.T) {
	e := cfSetup(t)
	sub := e.feed.Subscribe(func(int64) bool { return true }, 10)
	e.stop()
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("subscription outlived the feed")
	}
	if !errors.Is(sub.Err(), ErrFeedStopped) {
		t.Fatalf("err %v", sub.Err())
	}
	late := e.feed.Subscribe(func(int64) bool { return true }, 10)
	if !errors.Is(late.Err(), ErrFeedStopped) {
		t.Fatalf("a subscription to a stopped feed: err %v", late.Err())
	}
}
