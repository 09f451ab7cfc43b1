package postgres_test

import (
	"context"
	"testing"
	"time"

	"tradesvc/infra/postgres"
	"tradesvc/infra/testenv"
)

// The Analyzer's analyze samples few rows: the histogram it leaves has at most 11 bounds (a
// statistics target of 10), where Postgres' default target leaves up to 101.
func TestAnalyzerAnalyzesWithASmallSample(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url, schema := testenv.PGSchema(t)
	pool, err := postgres.Open(ctx, postgres.Config{URL: url, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	table := schema + ".grows"
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (id bigint PRIMARY KEY, v text);
		INSERT INTO `+table+` SELECT i, md5(i::text) FROM generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
	a := postgres.NewAnalyzer(pool, testenv.Logger(), table)
	a.Added(5000)
	var bounds int
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := pool.QueryRow(ctx, `SELECT coalesce(array_length(histogram_bounds::text::text[], 1), 0) FROM pg_stats
			WHERE schemaname = $1 AND tablename = 'grows' AND attname = 'v'`, schema).Scan(&bounds)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table was not analyzed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if bounds < 2 || bounds > 11 {
		t.Fatalf("histogram of %d bounds, want 2 to 11 (statistics target 10)", bounds)
	}
}
