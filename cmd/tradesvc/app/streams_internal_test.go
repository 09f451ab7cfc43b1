package app

import (
	"context"
	"testing"
	"time"

	"tradesvc/gateway/streams"
	"tradesvc/infra/testenv"
	"tradesvc/projections"
)

// The adapter keeps the change feed's meaning for the user streams: changes of the matched
// logins in order; a subscriber that fell behind ends with an error (the stream closes 1011);
// a feed that stopped ends it without one (1001, not "you fell behind"); Close ends it.
func TestStreamChangesRelayTheFeedAndTellLagFromShutdown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pool := testenv.MigratedPG(t)
	feed, err := projections.NewChangeFeed(projections.ChangeFeedConfig{ConnString: pool.Config().ConnString(),
		Logger: testenv.Logger(), Poll: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stop := testenv.Background(t, ctx, 10*time.Second, feed.Run)
	select {
	case <-feed.Ready():
	case <-ctx.Done():
		t.Fatal("the change feed never became ready")
	}
	write := func(logins ...int64) {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		for _, l := range logins {
			if _, err := tx.Exec(ctx, `INSERT INTO rm.changes (login, kind, api_key_id, client_order_id, event)
				VALUES ($1, 'DEAL', 7, 'coid', '{"e":"DEAL"}')`, l); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, '')`, projections.ChangesChannel); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	adapter := streamChanges{feed}
	only1 := func(l int64) bool { return l == 1 }

	ok := adapter.Subscribe(only1, 16)
	write(2, 1)
	select {
	case ch := <-ok.C():
		if ch.Login != 1 || ch.Kind != "DEAL" || ch.APIKeyID != 7 || ch.ClientOrderID != "coid" || string(ch.Event) != `{"e":"DEAL"}` {
			t.Fatalf("relayed %+v", ch)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nothing relayed")
	}
	ok.Close()
	waitDone(t, ok)
	if ok.Err() != nil {
		t.Fatalf("a closed subscription reports %v", ok.Err())
	}

	slow := adapter.Subscribe(only1, 1)
	write(1, 1, 1, 1)
	// Nothing is read until the feed has ended the subscription (its buffer of one overflowed).
	select {
	case <-slow.(*streamSub).src.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the feed never ended a subscriber that read nothing")
	}
	var got int
	for done := false; !done; {
		select {
		case <-slow.C():
			got++
		case <-slow.Done():
			done = true
		case <-time.After(10 * time.Second):
			t.Fatal("a subscriber that fell behind was never ended")
		}
	}
	if slow.Err() == nil || got >= 4 {
		t.Fatalf("fell behind: err %v after %d changes, want an error before all 4", slow.Err(), got)
	}

	idle := adapter.Subscribe(only1, 16)
	stop()
	waitDone(t, idle)
	if idle.Err() != nil {
		t.Fatalf("a stopped feed ends its subscribers with %v, want no lag error", idle.Err())
	}
	var _ streams.ChangeFeed = adapter
}

func waitDone(t *testing.T, s streams.Subscription) {
	t.Helper()
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the subscription did not end")
	}
}
