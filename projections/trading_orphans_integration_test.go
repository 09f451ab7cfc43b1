package projections

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka/batch"
)

// recordCommands stores, as the gateway does beside each command it appends, the idempotency
// record that names the operation of every command of evs that has one of its own.
func recordCommands(t testing.TB, pool *pgxpool.Pool, evs ...events.Event) {
	t.Helper()
	for _, ev := range evs {
		if _, ok := ev.(events.Command); !ok {
			continue
		}
		r, ok := trading.RequestOf(ev)
		if !ok || !r.OwnRecord() {
			continue
		}
		storeRecord(t, pool, r.APIKeyID, r.ClientOrderID, r.OperationID, r.Login)
	}
}

// recordMessages is recordCommands of the events of msgs.
func recordMessages(t testing.TB, pool *pgxpool.Pool, msgs []batch.Message) {
	t.Helper()
	for _, m := range msgs {
		if m.Event != nil {
			recordCommands(t, pool, m.Event)
		}
	}
}

// storeRecord stores the record of (apiKeyID, coid) naming op, unless the id has one already.
func storeRecord(t testing.TB, pool *pgxpool.Pool, apiKeyID int64, coid, op string, login int64) {
	t.Helper()
	if _, err := pool.Exec(context.Background(), `INSERT INTO cmd.idempotency (api_key_id, client_order_id, operation,
			login, operation_id, tag, attempt, request_hash, command, status)
		VALUES ($1, $2, 'PLACE_ORDER', $3, $4, '#' || left(md5($4), 6), 1, '\x00', '[]', 'QUEUED')
		ON CONFLICT (api_key_id, client_order_id) DO NOTHING`, apiKeyID, coid, login, op); err != nil {
		t.Fatal(err)
	}
}

// A command read ahead of its outcome is applied only when its idempotency record names its
// operation: an orphan (a same-id retry's command, appended beside an insert that found the
// id bound to an earlier operation) is not, and neither is its void outcome; a command whose
// record is not stored (yet) waits for its outcome, which carries it.
func TestTradingProjectionAppliesNoOrphanAndWaitsForAnUnrecordedCommandsOutcome(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pool, p := testTrading(t)
	msg := plainMessage
	first, orphan, unrecorded := marketOrder(1001, "op-first", "#ORPH01", "1", 1), marketOrder(1001, "op-orphan", "#ORPH02", "1", 1),
		marketOrder(1001, "op-late", "#ORPH03", "1", 1)
	orphan.ClientOrderID = first.ClientOrderID // the retry of op-first
	recordCommands(t, pool, first)
	if err := p.Apply(ctx, []batch.Message{msg(first), msg(orphan), msg(unrecorded)}); err != nil {
		t.Fatal(err)
	}
	reader := mustReader(t, pool)
	stored := func(op string) bool {
		t.Helper()
		_, ok, err := reader.Operation(ctx, op)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !stored("op-first") || stored("op-orphan") || stored("op-late") {
		t.Fatalf("stored: op-first %v, op-orphan %v, op-late %v; want only op-first", stored("op-first"),
			stored("op-orphan"), stored("op-late"))
	}
	void := outcomeOf(1001, "op-orphan", "#ORPH02", 1, "REJECTED")
	void.Void, void.Code = true, int(events.CodeClientOrderIDReused)
	void.CommandType, void.Command = orphan.EventType(), mustJSON(t, orphan)
	late := outcomeOf(1001, "op-late", "#ORPH03", 1, "REJECTED")
	late.Code = int(events.CodeNoConnection)
	late.CommandType, late.Command = unrecorded.EventType(), mustJSON(t, unrecorded)
	if err := p.Apply(ctx, []batch.Message{msg(void), msg(late)}); err != nil {
		t.Fatal(err)
	}
	if stored("op-orphan") || !stored("op-late") {
		t.Fatalf("after the outcomes: op-orphan %v, op-late %v; want op-late only", stored("op-orphan"), stored("op-late"))
	}
	// An orphan older than the records' retention (a log replayed long after): applied on its
	// own, as its record may be gone, then deleted by its void outcome.
	old := marketOrder(1001, "op-old", "#ORPH04", "1", 1)
	old.ClientOrderID, old.Requester.ReceivedAt = first.ClientOrderID, time.Now().Add(-49*time.Hour).UnixMilli()
	if err := p.Apply(ctx, []batch.Message{msg(old)}); err != nil {
		t.Fatal(err)
	}
	if !stored("op-old") {
		t.Fatal("a command older than the records' retention was not applied on its own")
	}
	oldVoid := outcomeOf(1001, "op-old", "#ORPH04", 1, "REJECTED")
	oldVoid.Void, oldVoid.Code = true, int(events.CodeClientOrderIDReused)
	if err := p.Apply(ctx, []batch.Message{msg(oldVoid)}); err != nil {
		t.Fatal(err)
	}
	if stored("op-old") {
		t.Fatal("the void outcome left the old orphan's operation")
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rm.operations WHERE client_order_id = $1`, first.ClientOrderID).
		Scan(&n); err != nil || n != 1 {
		t.Fatalf("%d operations under the retried client order id (%v), want 1", n, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM rm.changes WHERE operation_id = 'op-orphan'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d change rows of the orphan (%v), want none", n, err)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
