package command

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/testenv"
)

// A record lives 24 hours: within them a second insert under the same id is a retry; after
// them the id is treated as new (the insert replaces the expired record), and Purge removes
// records long expired.
func TestIdempotencyRecordsExpireAfterTheRetention(t *testing.T) {
	ctx := context.Background()
	rs, pool := testRecords(t)
	rec := Record{APIKeyID: 7, ClientOrderID: "c-1", Kind: "PLACE_ORDER", Login: 1001, OperationID: "op-1", Tag: "#000001", Attempt: 1}
	if got, err := rs.Insert(ctx, []Record{rec}); err != nil || !got[rec.key()] {
		t.Fatalf("first insert %v %v", got, err)
	}
	again := rec
	again.OperationID = "op-2"
	if got, err := rs.Insert(ctx, []Record{again}); err != nil || got[rec.key()] {
		t.Fatalf("insert within the retention replaced the record: %v %v", got, err)
	}
	if r, ok, err := rs.Get(ctx, 7, "c-1"); err != nil || !ok || r.OperationID != "op-1" {
		t.Fatalf("get %+v %v %v", r, ok, err)
	}
	if _, err := pool.Exec(ctx, `UPDATE cmd.idempotency SET created_at = now() - interval '25 hours'`); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := rs.Get(ctx, 7, "c-1"); err != nil || ok {
		t.Fatalf("an expired record is still found: %v %v", ok, err)
	}
	if got, err := rs.Insert(ctx, []Record{again}); err != nil || !got[rec.key()] {
		t.Fatalf("an expired id is not treated as new: %v %v", got, err)
	}
	if r, ok, _ := rs.Get(ctx, 7, "c-1"); !ok || r.OperationID != "op-2" {
		t.Fatalf("after reuse %+v", r)
	}
	if _, err := pool.Exec(ctx, `UPDATE cmd.idempotency SET created_at = now() - interval '49 hours'`); err != nil {
		t.Fatal(err)
	}
	if n, err := rs.Purge(ctx); err != nil || n != 1 {
		t.Fatalf("purge %d %v", n, err)
	}
}

// Concurrent requests under one id (a client's retry racing its first attempt) are grouped
// into shared inserts: exactly one of them stores its record, whichever round they land in,
// and the others find that record; requests under other ids are not held back.
func TestConcurrentInsertsUnderOneIDStoreExactlyOne(t *testing.T) {
	ctx := context.Background()
	rs, _ := testRecords(t)
	for round := range 5 {
		coid := fmt.Sprintf("race-%d", round)
		const racers = 12
		var wg sync.WaitGroup
		var won atomic.Int32
		for i := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				recs := []Record{{APIKeyID: 9, ClientOrderID: coid, Kind: "PLACE_ORDER", Login: 1001,
					OperationID: fmt.Sprintf("op-%d-%d", round, i), Tag: "#00000" + strconv.Itoa(i), Attempt: 1},
					{APIKeyID: 9, ClientOrderID: fmt.Sprintf("own-%d-%d", round, i), Kind: "PLACE_ORDER", Login: 1001,
						OperationID: fmt.Sprintf("own-op-%d-%d", round, i), Tag: "#10000" + strconv.Itoa(i), Attempt: 1}}
				got, err := rs.Insert(ctx, recs)
				if err != nil {
					t.Error(err)
					return
				}
				if got[recs[0].key()] {
					won.Add(1)
				}
				if !got[recs[1].key()] {
					t.Errorf("a record under its own id was not stored")
				}
			}()
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("round %d: %d requests stored their record under one id, want 1", round, won.Load())
		}
	}
}

// Exists answers for each caller whether its key holds a live record, when many ask at once
// (their lookups share rounds): a recorded id, an id of another key, an unknown id and an
// expired record each get their own answer.
func TestRecordsExistsAnswersEachConcurrentCaller(t *testing.T) {
	ctx := context.Background()
	rs, pool := testRecords(t)
	var recs []Record
	for i := range 50 {
		recs = append(recs, Record{APIKeyID: 7, ClientOrderID: fmt.Sprintf("live-%d", i), Kind: "PLACE_ORDER", Login: 1001,
			OperationID: fmt.Sprintf("op-%d", i), Tag: fmt.Sprintf("#%06d", i), Attempt: 1})
	}
	old := Record{APIKeyID: 7, ClientOrderID: "old", Kind: "PLACE_ORDER", Login: 1001, OperationID: "op-old", Tag: "#old000", Attempt: 1}
	if _, err := rs.Insert(ctx, append(recs, old)); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `UPDATE cmd.idempotency SET created_at = now() - interval '25 hours' WHERE client_order_id = 'old'`); err != nil {
		t.Fatal(err)
	}
	type ask struct {
		key  int64
		coid string
		want bool
	}
	var asks []ask
	for i := range 50 {
		asks = append(asks, ask{7, fmt.Sprintf("live-%d", i), true}, ask{8, fmt.Sprintf("live-%d", i), false},
			ask{7, fmt.Sprintf("unknown-%d", i), false})
	}
	asks = append(asks, ask{7, "old", false})
	var wg sync.WaitGroup
	var wrong atomic.Int32
	for _, a := range asks {
		wg.Go(func() {
			got, err := rs.Exists(ctx, a.key, a.coid)
			if err != nil || got != a.want {
				wrong.Add(1)
				t.Errorf("Exists(%d, %s) = %v, %v; want %v", a.key, a.coid, got, err, a.want)
			}
		})
	}
	wg.Wait()
	if n := wrong.Load(); n > 0 {
		t.Fatalf("%d of %d answers wrong", n, len(asks))
	}
}

// testRecords is a record store on a fresh migrated database, and its pool.
func testRecords(t *testing.T) (*Records, *pgxpool.Pool) {
	t.Helper()
	pool := testenv.MigratedPG(t)
	rs, err := NewRecords(pool)
	if err != nil {
		t.Fatal(err)
	}
	return rs, pool
}

// A record that carries its executor's claim stores the claim's "sent" row with it, in the
// same statement, at the claim's time; a record that finds its client order id taken (a
// retry) stores neither, and says so, and a round mixing both stores each as it should.
func TestIdempotencyRecordCarriesTheExecutorsClaim(t *testing.T) {
	ctx := context.Background()
	rs, pool := testRecords(t)
	at := time.Date(2026, 11, 24, 12, 0, 0, 123456000, time.UTC)
	sent := func(op string) (time.Time, bool) {
		t.Helper()
		var got time.Time
		err := pool.QueryRow(ctx, `SELECT sent_at FROM cmd.executions WHERE operation_id = $1 AND attempt = 1`, op).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			return got, false
		}
		if err != nil {
			t.Fatal(err)
		}
		return got, true
	}
	first := Record{APIKeyID: 7, ClientOrderID: "c-1", Kind: "PLACE_ORDER", Login: 1001, OperationID: "op-1", Tag: "#000001",
		Attempt: 1, Claim: &EarlyClaim{At: at}}
	plain := Record{APIKeyID: 7, ClientOrderID: "c-2", Kind: "PLACE_ORDER", Login: 1001, OperationID: "op-2", Tag: "#000002", Attempt: 1}
	got, err := rs.Insert(ctx, []Record{first, plain})
	if err != nil || !got[first.key()] || !got[plain.key()] {
		t.Fatalf("insert %v %v", got, err)
	}
	if !first.Claim.Claimed {
		t.Fatal("the claim's row was stored but the record does not say so")
	}
	if s, ok := sent("op-1"); !ok || !s.Equal(at) {
		t.Fatalf("claimed row: found %v, sent at %v, want %v", ok, s, at)
	}
	var login int64
	var tag, kind string
	if err := pool.QueryRow(ctx, `SELECT login, tag, kind FROM cmd.executions WHERE operation_id = 'op-1'`).Scan(&login, &tag, &kind); err != nil ||
		login != 1001 || tag != "#000001" || kind != "PLACE_ORDER" {
		t.Fatalf("claimed row: login %d tag %q kind %q (%v)", login, tag, kind, err)
	}
	if _, ok := sent("op-2"); ok {
		t.Fatal("a record without a claim stored a sent row")
	}
	retry := first
	retry.OperationID, retry.Claim = "op-3", &EarlyClaim{At: at.Add(time.Second)}
	if got, err := rs.Insert(ctx, []Record{retry}); err != nil || got[retry.key()] {
		t.Fatalf("a retry's insert stored its record: %v %v", got, err)
	}
	if retry.Claim.Claimed {
		t.Fatal("a retry's record says its claim was stored")
	}
	if _, ok := sent("op-3"); ok {
		t.Fatal("a retry's claim stored a sent row")
	}
}
