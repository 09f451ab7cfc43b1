package executor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"tradesvc/command/executor"
	"tradesvc/infra/testenv"
)

// The dispatch sweeper's round reads a few thousand records under load, each checked against
// cmd.executions. Planned as a hash of cmd.executions (a hashed subplan or a hash anti join),
// the check reads the whole table every round: on 200,000 orders, 0.5 to 2.2 s a round,
// every second, measured during a load. Here: 200,000 executions (vacuumed, as autovacuum
// leaves them), 6,000 records in the round's window; the plan must probe the primary key per
// record and never hash or scan the table.
func TestSweeperProbesExecutionsPerRecordAndNeverReadsTheWholeTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pool := testenv.MigratedPG(t)
	window := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for _, stmt := range []string{
		`INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at, outcome, decided_at)
			SELECT 'old-' || g, 1, 1101, '#old', 'PLACE_ORDER', $1::timestamptz - interval '1 hour', '{"status":"FILLED"}', $1::timestamptz
			FROM generate_series(1, 200000) g`,
		`INSERT INTO cmd.idempotency (api_key_id, client_order_id, operation, login, request_hash, status, operation_id,
				created_at, updated_at, attempt, tag, command)
			SELECT 1, 'coid-' || g, 'PLACE_ORDER', 1101, '\x00', 'QUEUED', 'op-' || g,
				$1::timestamptz + g * interval '1 ms', $1::timestamptz + g * interval '1 ms', 1, '#t',
				jsonb_build_array(jsonb_build_object('type', 'OrderRequested_v1',
					'payload', jsonb_build_object('operationId', 'op-' || g, 'attempt', 1)))
			FROM generate_series(1, 6000) g`,
		`INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at, outcome, decided_at)
			SELECT 'op-' || g, 1, 1101, '#t', 'PLACE_ORDER', $1::timestamptz, '{"status":"FILLED"}', $1::timestamptz
			FROM generate_series(1, 6000) g`,
	} {
		if _, err := pool.Exec(ctx, stmt, window); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{`VACUUM ANALYZE cmd.executions`, `VACUUM ANALYZE cmd.idempotency`} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	plan := testenv.Explain(t, ctx, pool, executor.ExpiredQuery, window, window.Add(7*time.Second),
		executor.SentTypes, executor.SentKinds)
	text := strings.Join(plan, "\n")
	probes := 0
	for i, line := range plan {
		if strings.Contains(line, "Hash") || strings.Contains(line, "hashed") || strings.Contains(line, "Seq Scan on executions") {
			t.Errorf("the sweeper's round reads the whole of cmd.executions (%q):\n%s", strings.TrimSpace(line), text)
		}
		if strings.Contains(line, "on executions") {
			if i+1 >= len(plan) || !strings.Contains(plan[i+1], "Index Cond: ((operation_id =") {
				t.Errorf("cmd.executions is scanned without its key (%q):\n%s", strings.TrimSpace(line), text)
			}
			probes++
		}
	}
	if probes != 2 {
		t.Errorf("want the two checks of cmd.executions (the record's attempt, then each leg's) probed by key, found %d:\n%s", probes, text)
	}
}
