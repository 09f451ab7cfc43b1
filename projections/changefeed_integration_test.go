package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/trading"
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

func cfSetup(t *testing.T, opts ...func(*ChangeFeedConfig)) *cfEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &cfEnv{t: t, ctx: ctx, pool: testenv.MigratedPG(t)}
	// The writer commits a few rows before the feed starts: history the feed must not replay.
	e.write(row(1, query.ChangeDeal, ""), row(2, query.ChangeDeal, ""))
	cfg := ChangeFeedConfig{ConnString: e.pool.Config().ConnString() + "&application_name=" + cfAppName,
		Logger: testenv.Logger(), Poll: 100 * time.Millisecond}
	for _, o := range opts {
		o(&cfg)
	}
	feed, err := NewChangeFeed(cfg)
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
	r := changeRow{login: login, kind: kind, operationID: operationID}
	if kind == query.ChangeOperation {
		st := &query.OperationState{Derived: trading.Derived{Status: trading.StatusFilled, Attempt: 1}, Version: 1, Answered: true}
		b, _ := json.Marshal(st)
		ev, r.op = string(b), st
	}
	r.event = []byte(ev)
	if query.IsUserStreamKind(kind) {
		c := query.Change{Kind: kind}
		if err := decodeChange(&c, r.event); err != nil {
			panic(err)
		}
		r.fact = c.Fact
	}
	return r
}

// write commits rows in one transaction of partition 0, as the projection does, and
// announces them with their payload; notify false leaves the feed to its poll.
func (e *cfEnv) write(rows ...changeRow) { e.t.Helper(); e.writePart(0, true, rows...) }

func (e *cfEnv) writeNotify(notify bool, rows ...changeRow) {
	e.t.Helper()
	e.writePart(0, notify, rows...)
}

func (e *cfEnv) writePart(part int32, notify bool, rows ...changeRow) []changeRow {
	e.t.Helper()
	rows = append([]changeRow(nil), rows...)
	err := pgx.BeginFunc(e.ctx, e.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		queueChangeRows(b, part, rows)
		if notify {
			queueNotify(b, part, rows) // as the trading projection does: in the transaction
		}
		return tx.SendBatch(e.ctx, b).Close()
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return rows
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
	ones := e.feed.Subscribe(query.Scope{Match: func(login int64) bool { return login == 1 }}, 5000)
	defer ones.Close()
	twos := e.feed.Subscribe(query.Scope{Match: func(login int64) bool { return login == 2 }}, 5000)
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

// Waiters get the operation's state itself from OPERATION rows (nothing to read back), the
// newest first; a waiter that starts after the state committed still gets it.
func TestChangeFeedHandsOperationStatesToWaiters(t *testing.T) {
	e := cfSetup(t)
	a, stopA := e.feed.WatchOperation("op-a")
	b, stopB := e.feed.WatchOperation("op-b")
	// A DEAL row owned by op-a carries no state: only OPERATION rows do.
	e.write(row(1, query.ChangeDeal, "op-a"), row(1, query.ChangeOperation, "op-b"))
	select {
	case st := <-b:
		if st.Status != trading.StatusFilled || st.Version != 1 || !st.Answered {
			t.Fatalf("op-b state %+v", st)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("op-b watcher not woken")
	}
	select {
	case st := <-a: // dispatched before op-b's row, so it would be pending by now
		t.Fatalf("op-a watcher got %+v from a DEAL row", st)
	default:
	}
	// Two states committed before the waiter takes one: it gets the newer.
	older := row(1, query.ChangeOperation, "op-a")
	newer := row(1, query.ChangeOperation, "op-a")
	newer.event = []byte(`{"status":"REJECTED","code":-2010,"attempt":1,"version":2,"answered":true}`)
	e.write(older, newer)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case st := <-a:
			if st.Version == 1 {
				continue // taken before the newer one arrived
			}
			if st.Status != trading.StatusRejected || st.Code != -2010 || st.Version != 2 {
				t.Fatalf("op-a state %+v", st)
			}
		case <-deadline:
			t.Fatal("op-a watcher never got version 2")
		}
		break
	}
	// A waiter that starts now gets the latest state at once.
	late, stopLate := e.feed.WatchOperation("op-a")
	select {
	case st := <-late:
		if st.Version != 2 {
			t.Fatalf("late watcher got %+v", st)
		}
	default:
		t.Fatal("a waiter that starts after the state committed did not get it")
	}
	stopA()
	stopB()
	stopB() // stopping twice is harmless
	stopLate()
	e.feed.mu.Lock()
	left := len(e.feed.watchers)
	e.feed.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d watcher sets left after stop", left)
	}
}

// Partitions are numbered apart and delivered each in its order; rows handed over in process
// (Publish) are delivered at once and not again when their NOTIFY arrives; a partition whose
// next rows are missing is read by query.
func TestChangeFeedDeliversEachPartitionInOrderWhateverWayItsRowsArrive(t *testing.T) {
	e := cfSetup(t)
	sub := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 5000)
	defer sub.Close()
	p3 := e.writePart(3, false, row(30, query.ChangeDeal, ""), row(30, query.ChangeDeal, ""))
	p5 := e.writePart(5, true, row(50, query.ChangeDeal, ""))
	got := map[int32][]int64{}
	for len(got[3])+len(got[5]) < 3 {
		c := next(t, sub)
		got[c.Part] = append(got[c.Part], c.Seq)
	}
	if fmt.Sprint(got[3]) != fmt.Sprint([]int64{p3[0].seq, p3[1].seq}) || fmt.Sprint(got[5]) != fmt.Sprint([]int64{p5[0].seq}) {
		t.Fatalf("delivered %v, want partition 3 %d,%d and partition 5 %d", got, p3[0].seq, p3[1].seq, p5[0].seq)
	}
	// In process: published rows go at once; their NOTIFY later changes nothing.
	rows := e.writePart(3, false, row(31, query.ChangeDeal, ""))
	e.feed.Publish(3, []query.Change{rows[0].change(3, time.Now())})
	if c := next(t, sub); c.Part != 3 || c.Seq != rows[0].seq || c.Login != 31 {
		t.Fatalf("published row came as %+v", c)
	}
	for _, payload := range notifyPayloads(3, rows) {
		if _, err := e.pool.Exec(e.ctx, "SELECT pg_notify($1, $2)", ChangesChannel, payload); err != nil {
			t.Fatal(err)
		}
	}
	// A row published past a gap makes the feed read the partition: both come, in order.
	skipped := e.writePart(3, false, row(32, query.ChangeDeal, ""))
	after := e.writePart(3, false, row(33, query.ChangeDeal, ""))
	e.feed.Publish(3, []query.Change{after[0].change(3, time.Now())})
	for i, want := range []int64{skipped[0].seq, after[0].seq} {
		if c := next(t, sub); c.Part != 3 || c.Seq != want {
			t.Fatalf("after the gap, change %d is %+v, want seq %d", i, c, want)
		}
	}
	select {
	case c := <-sub.C():
		t.Fatalf("a row came twice: %+v", c)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestChangeFeedEndsALaggingSubscriptionWithErrLagged(t *testing.T) {
	e := cfSetup(t)
	slow := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 2)
	fast := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 100)
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
	sub := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 100)
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

// A crash of Postgres takes back the trading projection's last asynchronous commits, change
// rows and head included, and the projection numbers the rows it applies again from the head
// the crash left. The feed, reconnecting, finds the head below the last row it dispatched:
// the subscriptions that saw the row taken back end with ErrStoreRestarted (a kind of
// ErrChangesLost: their clients resnapshot), and the row numbered anew reaches a new
// subscription instead of being taken for one already dispatched.
func TestChangeFeedEndsTheSubscriptionsOfRowsTheStoreTookBack(t *testing.T) {
	e := cfSetup(t)
	sub := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 100)
	defer sub.Close()
	e.write(row(7, query.ChangeDeal, ""))
	taken := next(t, sub)
	if taken.Login != 7 {
		t.Fatalf("%+v", taken)
	}
	// What the crash does: the commit of login 7's row never happened.
	if _, err := e.pool.Exec(e.ctx, `DELETE FROM rm.changes WHERE part = 0 AND seq = $1`, taken.Seq); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(e.ctx, `UPDATE rm.change_heads SET seq = $1 WHERE part = 0`, taken.Seq-1); err != nil {
		t.Fatal(err)
	}
	var killed int
	if err := e.pool.QueryRow(e.ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND datname = current_database()`, cfAppName).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d feed connections (%v)", killed, err)
	}
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription that saw the row taken back was not ended")
	}
	if !errors.Is(sub.Err(), ErrStoreRestarted) || !errors.Is(sub.Err(), ErrChangesLost) {
		t.Fatalf("err %v, want ErrStoreRestarted (an ErrChangesLost)", sub.Err())
	}
	again := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 100)
	defer again.Close()
	e.write(row(9, query.ChangeDeal, "")) // applied again: the number login 7's row had
	if c := next(t, again); c.Login != 9 || c.Seq != taken.Seq {
		t.Fatalf("the row numbered anew: %+v, want login 9 at seq %d", c, taken.Seq)
	}
}

func TestChangeFeedEndsSubscriptionsWhenItStops(t *testing.T) {
	e := cfSetup(t)
	sub := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 10)
	e.stop()
	select {
	case <-sub.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("subscription outlived the feed")
	}
	if !errors.Is(sub.Err(), ErrFeedStopped) {
		t.Fatalf("err %v", sub.Err())
	}
	late := e.feed.Subscribe(query.Scope{Match: func(int64) bool { return true }}, 10)
	if !errors.Is(late.Err(), ErrFeedStopped) {
		t.Fatalf("a subscription to a stopped feed: err %v", late.Err())
	}
}

// A transaction's NOTIFYs are numbered by Postgres (queueNotify): each payload ends at the row
// it names, its rows carry the numbers the insert gave them, a row too large for a payload is
// announced without rows, and a transaction rolled back announces nothing.
func TestNotifiesOfATransactionCarryTheNumbersItsRowsGot(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool := testenv.MigratedPG(t)
	listener, err := pgx.Connect(ctx, pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer listener.Close(context.Background())
	if _, err := listener.Exec(ctx, "LISTEN "+ChangesChannel); err != nil {
		t.Fatal(err)
	}
	write := func(commit bool, rows []changeRow) []changeRow {
		rows = append([]changeRow(nil), rows...)
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck // after Commit a no-op
		b := &pgx.Batch{}
		queueChangeRows(b, 4, rows)
		queueNotify(b, 4, rows)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			t.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		return rows
	}
	big := row(3, query.ChangeDeal, "")
	big.event = []byte(`"` + strings.Repeat("z", maxNotifyPayload) + `"`)
	write(false, []changeRow{row(9, query.ChangeDeal, "")}) // rolled back: no NOTIFY
	first := write(true, []changeRow{row(1, query.ChangeDeal, "")})
	rows := write(true, []changeRow{row(2, query.ChangeDeal, ""), row(2, query.ChangeOperation, "op-2"), big, row(4, query.ChangeDeal, "")})

	var got []notifyPayload
	for len(got) < 4 {
		n, err := listener.WaitForNotification(ctx)
		if err != nil {
			t.Fatalf("after %d notifications: %v", len(got), err)
		}
		if part, to, ok := peekNotify(n.Payload); !ok || part != 4 {
			t.Fatalf("payload %q: head %d %d %v", n.Payload, part, to, ok)
		}
		var p notifyPayload
		if err := json.Unmarshal([]byte(n.Payload), &p); err != nil {
			t.Fatalf("payload %q: %v", n.Payload, err)
		}
		got = append(got, p)
	}
	want := [][]int64{{first[0].seq}, {rows[0].seq, rows[1].seq}, nil, {rows[3].seq}}
	wantTo := []int64{first[0].seq, rows[1].seq, rows[2].seq, rows[3].seq}
	for i, p := range got {
		var seqs []int64
		for j := range p.Rows {
			seqs = append(seqs, p.rowSeq(j))
		}
		if p.To != wantTo[i] || fmt.Sprint(seqs) != fmt.Sprint(want[i]) {
			t.Errorf("notification %d: to %d rows %v, want to %d rows %v", i, p.To, seqs, wantTo[i], want[i])
		}
	}
	if got[1].Rows[1].Login != 2 || got[1].Rows[1].OperationID != "op-2" || got[3].Rows[0].Login != 4 {
		t.Errorf("rows: %+v, %+v", got[1].Rows, got[3].Rows)
	}
	if rows[0].seq != first[0].seq+1 {
		t.Errorf("the rolled back transaction took numbers: %d then %d", first[0].seq, rows[0].seq)
	}
}
