package command

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

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
