package postgres_test

import (
	"context"
	"testing"

	"tradesvc/infra/postgres"
	"tradesvc/infra/testenv"
)

// The command side must commit synchronously; only read-model pools opt out.
func TestOpen_SynchronousCommitOnlyOffWhenAsked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testenv.PG(t)
	for _, async := range []bool{false, true} {
		pool, err := postgres.Open(ctx, postgres.Config{URL: url, MaxConns: 2, AsyncCommit: async})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		err = pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&got)
		pool.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{false: "on", true: "off"}[async]
		if got != want {
			t.Errorf("AsyncCommit=%v: synchronous_commit=%s, want %s", async, got, want)
		}
	}
}
