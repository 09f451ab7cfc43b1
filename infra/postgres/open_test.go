package postgres_test

import (
	"context"
	"testing"

	"tradesvc/infra/postgres"
	"tradesvc/infra/testenv"
)

// Every pool commits synchronously, even against a server (or a URL) whose default is off:
// a commit Postgres acknowledged is one a crash cannot take back.
func TestOpen_CommitsSynchronously(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := postgres.Open(ctx, postgres.Config{URL: testenv.PG(t) + "&options=-c%20synchronous_commit%3Doff", MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var got string
	if err := pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != "on" {
		t.Errorf("synchronous_commit=%s, want on", got)
	}
}

// A keyed pool's plan, made once per connection while a table was small, still reads only
// the rows of its batch once the table has grown: an update joined to a batch by key
// fetches its row, not the table. Checked to fail without enable_hashjoin = off: the plan
// made at 30 rows hashed the whole table, 20,060 rows fetched for a batch of one.
func TestOpen_KeyedPlansReadOnlyTheBatchOnceTheTableGrew(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, _ := testenv.PGSchema(t)
	pool, err := postgres.Open(ctx, postgres.Config{URL: url, MaxConns: 1, KeyedPlans: true})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := pool.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`CREATE TABLE ops (id text PRIMARY KEY, v int) WITH (autovacuum_enabled = off)`)
	exec(`INSERT INTO ops SELECT 'op' || i, 0 FROM generate_series(1, 30) AS i`)
	exec(`ANALYZE ops`)
	const update = `UPDATE ops o SET v = u.v FROM unnest($1::text[], $2::int[]) AS u(id, v) WHERE o.id = u.id`
	exec(update, []string{"op1"}, []int32{1}) // the generic plan is made now, at 30 rows
	exec(`INSERT INTO ops SELECT 'op' || i, 0 FROM generate_series(31, 20030) AS i`)

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // read-only check
	tag, err := tx.Exec(ctx, update, []string{"op20000"}, []int32{2})
	if err != nil {
		t.Fatal(err)
	}
	if tag.RowsAffected() != 1 {
		t.Fatalf("updated %d rows, want 1", tag.RowsAffected())
	}
	var fetched int64
	if err := tx.QueryRow(ctx, `SELECT pg_stat_get_xact_tuples_fetched('ops_pkey'::regclass)`).Scan(&fetched); err != nil {
		t.Fatal(err)
	}
	if fetched > 10 { // a keyed lookup fetches the row (2 counted); a hash join, every row
		t.Errorf("the update of one row fetched %d rows of a 20,030-row table through its index: the plan made at 30 rows reads the table whole", fetched)
	}
}
