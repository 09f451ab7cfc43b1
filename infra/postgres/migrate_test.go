package postgres_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/postgres"
	"tradesvc/infra/testenv"
)

func openTestDB(t *testing.T) *pgxpool.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := postgres.Open(ctx, postgres.Config{URL: testenv.PGDatabase(t), MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// The embedded migrations build the command side on an empty database, and a second run
// changes nothing.
func TestMigrate_EmbeddedCreatesCommandSideAndRerunIsNoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := openTestDB(t)

	first, err := postgres.MigrateFS(ctx, pool, postgres.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	if len(first) == 0 || first[0] != 1 {
		t.Fatalf("first run applied %v, want 0001 first", first)
	}
	second, err := postgres.MigrateFS(ctx, pool, postgres.Migrations())
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 0 {
		t.Fatalf("second run applied %v, want nothing", second)
	}

	for _, table := range []string{"cmd.api_keys", "cmd.idempotency", "cmd.switches", "cmd.executor_heartbeats"} {
		var exists bool
		if err := pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", table).Scan(&exists); err != nil || !exists {
			t.Errorf("table %s missing (err %v)", table, err)
		}
	}
	var rmSchema bool
	if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'rm')").Scan(&rmSchema); err != nil || !rmSchema {
		t.Errorf("schema rm missing (err %v)", err)
	}
	var trading string
	if err := pool.QueryRow(ctx, "SELECT value FROM cmd.switches WHERE name = 'trading'").Scan(&trading); err != nil || trading != "on" {
		t.Errorf("switch trading = %q (err %v), want on", trading, err)
	}

	// The idempotency key is (api key, client order id): a second insert must conflict.
	insert := `INSERT INTO cmd.idempotency (api_key_id, client_order_id, operation, login, request_hash)
	           VALUES (1, 'abc', 'PLACE_ORDER', 1001, '\x00') ON CONFLICT DO NOTHING`
	for i, want := range []int64{1, 0} {
		tag, err := pool.Exec(ctx, insert)
		if err != nil {
			t.Fatal(err)
		}
		if tag.RowsAffected() != want {
			t.Errorf("insert %d affected %d rows, want %d", i, tag.RowsAffected(), want)
		}
	}
}

// Several instances starting at once each run the migrations; the advisory lock makes every
// migration run exactly once and nobody fails.
func TestMigrate_ConcurrentRunsApplyEachMigrationOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := openTestDB(t)

	// Migration 2 is not idempotent on purpose (a plain INSERT): a double run would show as
	// two rows, and a slow migration widens the window in which runners overlap.
	fsys := fstest.MapFS{
		"0001_table.sql": {Data: []byte("CREATE TABLE ran (id serial PRIMARY KEY, what text NOT NULL);")},
		"0002_slow.sql":  {Data: []byte("SELECT pg_sleep(0.3); INSERT INTO ran (what) VALUES ('two');")},
		"0003_more.sql":  {Data: []byte("INSERT INTO ran (what) VALUES ('three');")},
	}
	const runners = 5
	results := make([][]int, runners)
	errs := make([]error, runners)
	var wg sync.WaitGroup
	for i := range runners {
		wg.Go(func() { results[i], errs[i] = postgres.MigrateFS(ctx, pool, fsys) })
	}
	wg.Wait()

	var all []int
	for i := range runners {
		if errs[i] != nil {
			t.Fatalf("runner %d: %v", i, errs[i])
		}
		all = append(all, results[i]...)
	}
	slices.Sort(all)
	if !slices.Equal(all, []int{1, 2, 3}) {
		t.Fatalf("applied across runners %v, want each of 1,2,3 exactly once", all)
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM ran").Scan(&n); err != nil || n != 2 {
		t.Fatalf("rows in ran = %d (err %v), want 2", n, err)
	}
}

// A failing migration rolls back completely (including its bookkeeping row), earlier ones
// stay, and a fixed file is applied by the next run.
func TestMigrate_FailedMigrationRollsBackAndIsRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := openTestDB(t)

	broken := fstest.MapFS{
		"0001_a.sql": {Data: []byte("CREATE TABLE a (id int);")},
		"0002_b.sql": {Data: []byte("CREATE TABLE b (id int); INSERT INTO no_such_table VALUES (1);")},
	}
	applied, err := postgres.MigrateFS(ctx, pool, broken)
	if err == nil {
		t.Fatal("broken migration succeeded")
	}
	if !slices.Equal(applied, []int{1}) {
		t.Fatalf("applied %v before the failure, want [1]", applied)
	}
	var bExists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('b') IS NOT NULL").Scan(&bExists); err != nil || bExists {
		t.Fatalf("table b exists=%v (err %v): the failed migration was not rolled back", bExists, err)
	}

	fixed := fstest.MapFS{
		"0001_a.sql": broken["0001_a.sql"],
		"0002_b.sql": {Data: []byte("CREATE TABLE b (id int);")},
	}
	applied, err = postgres.MigrateFS(ctx, pool, fixed)
	if err != nil || !slices.Equal(applied, []int{2}) {
		t.Fatalf("rerun applied %v (err %v), want [2]", applied, err)
	}
}

func TestLoadMigrations_RejectsBadNamesAndDuplicates(t *testing.T) {
	t.Parallel()
	cases := map[string]fstest.MapFS{
		"no number":      {"init.sql": {Data: []byte("SELECT 1")}},
		"duplicate":      {"0001_a.sql": {Data: []byte("SELECT 1")}, "01_b.sql": {Data: []byte("SELECT 1")}},
		"zero version":   {"0000_a.sql": {Data: []byte("SELECT 1")}},
		"missing suffix": {"0001.sql": {Data: []byte("SELECT 1")}},
	}
	for name, fsys := range cases {
		if _, err := postgres.LoadMigrations(fsys); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ms, err := postgres.LoadMigrations(fstest.MapFS{
		"0010_b.sql": {Data: []byte("SELECT 2")},
		"0002_a.sql": {Data: []byte("SELECT 1")},
		"README.md":  {Data: []byte("not a migration")},
	})
	if err != nil || len(ms) != 2 || ms[0].Version != 2 || ms[1].Version != 10 {
		t.Fatalf("got %+v (err %v), want versions 2 then 10", ms, err)
	}
}

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	if err := (postgres.Config{}).Validate(); err == nil {
		t.Error("empty URL accepted")
	}
	if err := (postgres.Config{URL: "postgres://x@127.0.0.1/db", MaxConns: -1}).Validate(); err == nil {
		t.Error("negative MaxConns accepted")
	}
	if err := (postgres.Config{URL: "postgres://x@127.0.0.1/db"}).Validate(); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
}
