package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka/batch"
)

// A gateway appends a single operation's command beside the insert of its idempotency record
// (command/submit.go, recordBeside). A same-id retry's insert finds the client order id taken
// and its command stays in the log, an orphan: the executor never sends it and decides it
// with a void outcome (events.ExecutionOutcome.Void), and no read model may show it. So a
// command read from the command topic, ahead of its outcome, is applied only when its
// operation's record names it (one read per batch that holds such commands); the others are
// left to their outcome, which carries the command (an insert that failed, or that has not
// committed yet, is stored again from the command by the executor before it sends). A void
// outcome is applied not at all, and the trading projection deletes a row its command may
// have made (voided).
//
// A command older than the records' retention (trading.ClientOrderIDRetention) is applied as before: its
// record may be gone (a log replayed long after, or written before outcomes carried their
// commands). An orphan among those is removed again by its void outcome, later in the log
// (the trading projection; the execution-quality table keeps such a row, undecided).

// unrecorded returns msgs with the command events whose operation's record does not name it
// taken out (Event nil: applied by nothing, their positions still advance). Commands applied
// already (applied, when not nil), those older than the records' retention at now, and those
// of operations without a record of their own are kept as they are.
func unrecorded(ctx context.Context, q querier, msgs []batch.Message, applied func(events.Event) bool, now time.Time) ([]batch.Message, error) {
	oldest := now.Add(-trading.ClientOrderIDRetention).UnixMilli()
	asked := func(ev events.Event) (string, bool) {
		if _, ok := ev.(events.Command); !ok || applied != nil && applied(ev) {
			return "", false
		}
		r, ok := trading.RequestOf(ev)
		return r.OperationID, ok && r.OwnRecord() && r.RequestedAt > oldest
	}
	var ids []string
	for _, m := range msgs {
		if id, ok := asked(m.Event); ok {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return msgs, nil
	}
	rows, err := q.Query(ctx, `SELECT operation_id FROM cmd.idempotency WHERE operation_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read the idempotency records of %d commands: %w", len(ids), err)
	}
	named, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the idempotency records of %d commands: %w", len(ids), err)
	}
	if len(named) == len(ids) {
		return msgs, nil
	}
	recorded := make(map[string]bool, len(named))
	for _, id := range named {
		recorded[id] = true
	}
	out := make([]batch.Message, len(msgs))
	copy(out, msgs)
	for i, m := range out {
		if id, ok := asked(m.Event); ok && !recorded[id] {
			out[i].Event = nil
		}
	}
	return out, nil
}

// voided deletes the operations rows that the void outcomes of msgs name: made by an orphan's
// command applied on its own (older than the records' retention when read). Nothing else ever
// writes such a row (the operation was never sent), so the delete is idempotent.
func voided(ctx context.Context, pool *pgxpool.Pool, msgs []batch.Message) error {
	var ids []string
	for _, m := range msgs {
		if out, ok := m.Event.(*events.ExecutionOutcome); ok && out.Void {
			ids = append(ids, out.OperationID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := pool.Exec(ctx, `DELETE FROM rm.operations WHERE operation_id = ANY($1)`, ids); err != nil {
		return fmt.Errorf("delete the operations of %d void outcomes: %w", len(ids), err)
	}
	return nil
}
