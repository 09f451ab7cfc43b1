package projections

import (
	"context"
	"strings"
	"testing"

	"tradesvc/infra/testenv"
)

// A fresh batch's operations go in by one statement that reads each of its rows once: the
// commands' arrays and their derived columns' in one unnest. With hash and merge joins off
// (the projection's pool: postgres.Config.KeyedPlans), a join of the derived rows to the
// commands is a nested loop that rescans one side per row of the other, a cost that grows
// with the square of the batch: 124 ms for a batch of 74 operations at 1,000 orders/s, a
// fifth of Postgres' time. The generic plan (the one the pool uses) must scan the arrays once
// and join nothing.
func TestInsertOperationsReadsTheBatchOnceWithoutAJoin(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // nothing is written
	for _, set := range []string{"plan_cache_mode = force_generic_plan", "enable_seqscan = off",
		"enable_hashjoin = off", "enable_mergejoin = off"} {
		if _, err := tx.Exec(ctx, "SET LOCAL "+set); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec(ctx, "PREPARE insert_operations AS "+insertOperations.SQL()); err != nil {
		t.Fatal(err)
	}
	params := commandTable.cols + len(derivedColumns)
	plan := testenv.Explain(t, ctx, tx, "EXECUTE insert_operations("+strings.TrimSuffix(strings.Repeat("NULL, ", params), ", ")+")")
	text := strings.Join(plan, "\n")
	scans := 0
	for _, line := range plan {
		if strings.Contains(line, "Join") || strings.Contains(line, "Nested Loop") {
			t.Errorf("the insert of a fresh batch's operations joins (%q):\n%s", strings.TrimSpace(line), text)
		}
		if strings.Contains(line, "Function Scan") {
			scans++
		}
	}
	if scans != 1 {
		t.Errorf("want the batch's arrays read by one function scan, found %d:\n%s", scans, text)
	}
}
