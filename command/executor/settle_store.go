package executor

import (
	"context"
	"fmt"
	"time"

	json "github.com/goccy/go-json"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// unsettledRow is one attempt the background settling asks about: an unsettled outcome, or a
// "sent" row whose outcome never came (then its command is the idempotency record's).
type unsettledRow struct {
	cursor     unsettledCursor
	sentAt     time.Time
	decided    bool
	status     string
	unanswered bool
	decidedAt  time.Time
	// The command event the attempt sends, as it was appended.
	commandType string
	command     json.RawMessage
}

// unsettledCursor is where a page of unsettled rows ends (rows come in this order).
type unsettledCursor struct {
	sentAt    time.Time
	id        string
	attempt   int
	hasCursor bool
}

// operation rebuilds the attempt's operation from its command; ok is false when the command
// is missing or cannot be read (an outcome written before outcomes carried their command).
func (r unsettledRow) operation() (*operation, bool) {
	if r.commandType == "" || len(r.command) == 0 {
		return nil, false
	}
	env := events.Envelope{Type: r.commandType, Payload: r.command}
	ev, err := events.Decode(env)
	if err != nil {
		return nil, false
	}
	o, ok := newOperation(env, ev)
	if !ok || o.invalid != nil || o.op.OperationID != r.cursor.id || o.op.Attempt != r.cursor.attempt {
		return nil, false
	}
	return &o, true
}

// unsettled pages through the attempts of kinds to settle, oldest sent first, after the
// cursor: unsettled outcomes of attempts sent before settleBefore, and "sent" rows without
// outcome sent before abandonedBefore whose command the idempotency record still holds (a
// sweep's legs are not found there: their redelivered command recovers them). Nothing sent
// before horizon is asked about.
//
// The unsettled outcomes are the partial index executions_unsettled (migration 0020); a
// pending placement without an answer is left out here (trading.Kind.Unsettled), so the
// known shortfalls of the trade server, which answer nothing, do not pile up in every round.
func (s *executions) unsettled(ctx context.Context, kinds []string, settleBefore, abandonedBefore, horizon time.Time,
	after unsettledCursor, limit int) ([]unsettledRow, error) {
	rows, err := s.pool.Query(ctx, `SELECT * FROM (
			SELECT e.operation_id, e.attempt, e.sent_at, true AS decided, e.outcome->>'status',
				coalesce(e.outcome->>'unanswered' = 'true', false), coalesce(e.decided_at, e.sent_at),
				coalesce(e.outcome->>'commandType', ''), e.outcome->'command'
			FROM cmd.executions e
			WHERE (e.outcome->>'status' = 'IN_DOUBT' OR e.outcome->>'unanswered' = 'true')
				AND e.kind = ANY($1) AND e.sent_at > $4 AND e.sent_at <= $2
				AND (e.outcome->>'status' = 'IN_DOUBT' OR e.kind = ANY($5) OR e.outcome->'command'->>'type' = $6)
			UNION ALL
			SELECT e.operation_id, e.attempt, e.sent_at, false, '', false, e.sent_at, env->>'type', env->'payload'
			FROM cmd.executions e
			JOIN cmd.idempotency i ON i.operation_id = e.operation_id AND i.attempt = e.attempt
			CROSS JOIN LATERAL jsonb_array_elements(i.command) env
			WHERE e.outcome IS NULL AND e.kind = ANY($1) AND e.sent_at > $4 AND e.sent_at <= $3
				AND env->'payload'->>'operationId' = e.operation_id
		) r (operation_id, attempt, sent_at, decided, status, unanswered, decided_at, command_type, command)
		WHERE NOT $7 OR (r.sent_at, r.operation_id, r.attempt) > ($8, $9, $10)
		ORDER BY r.sent_at, r.operation_id, r.attempt LIMIT $11`,
		kinds, settleBefore, abandonedBefore, horizon, atMarketKinds, trading.TypeMarket,
		after.hasCursor, after.sentAt, after.id, after.attempt, limit)
	if err != nil {
		return nil, fmt.Errorf("read unsettled attempts: %w", err)
	}
	defer rows.Close()
	var out []unsettledRow
	for rows.Next() {
		var r unsettledRow
		var attempt int32
		var cmd []byte
		if err := rows.Scan(&r.cursor.id, &attempt, &r.sentAt, &r.decided, &r.status, &r.unanswered, &r.decidedAt,
			&r.commandType, &cmd); err != nil {
			return nil, fmt.Errorf("read unsettled attempts: %w", err)
		}
		r.cursor.attempt, r.cursor.sentAt, r.cursor.hasCursor = int(attempt), r.sentAt, true
		r.command = cmd
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read unsettled attempts: %w", err)
	}
	return out, nil
}

// atMarketKinds are the kinds to settle that execute at market whatever order type they
// name (a close): their unanswered attempts are unsettled without looking at the type.
var atMarketKinds = trading.KindNames(func(k trading.Kind) bool { return k.ByTag() && k.AtMarket("") })
