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
