package projections

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"tradesvc/events"
	"tradesvc/query"
)

// changeRow is one row of rm.changes.
type changeRow struct {
	login         int64
	kind          string
	operationID   string
	apiKeyID      int64
	clientOrderID string
	event         []byte
}

// tagOwner is the operation whose tag a deal's or an order's comment carries.
type tagOwner struct {
	operationID   string
	apiKeyID      int64
	clientOrderID string
}

type loginTag struct {
	login int64
	tag   string
}

// queueChanges queues the batch's change-feed rows: the frames of the facts it applied, in
// the trade server's order, then an OPERATION row per operation whose visible state changed.
// Rows are inserted under the change-feed lock (seq order is commit order) and announced
// with NOTIFY, which Postgres delivers at commit.
func (t *Trading) queueChanges(b *pgx.Batch, items []*tradingItem, owners map[loginTag]tagOwner, ops []opChange) error {
	rows := make([]changeRow, 0, len(items)+len(ops))
	for _, it := range items {
		r, ok, err := t.frameRow(it, owners)
		if err != nil {
			return err
		}
		if ok {
			rows = append(rows, r)
		}
	}
	for _, o := range ops {
		if !o.Visible {
			continue
		}
		ev, err := json.Marshal(operationFrame{Status: o.Derived.Status, Version: o.Version, Answered: o.Answered})
		if err != nil {
			return err
		}
		rows = append(rows, changeRow{login: o.Login, kind: ChangeOperation, operationID: o.OperationID, event: ev})
	}
	if len(rows) == 0 {
		return nil
	}
	b.Queue("SELECT pg_advisory_xact_lock($1, $2)", changeFeedLockClass, changeFeedLockID)
	queueChangeRows(b, rows)
	b.Queue("SELECT pg_notify($1, '')", ChangesChannel)
	return nil
}

// insertChangesSQL inserts a batch's change rows in one statement, in their order (seq
// values are drawn in the order the rows are produced).
const insertChangesSQL = `INSERT INTO rm.changes (login, kind, operation_id, api_key_id, client_order_id, event)
SELECT login, kind, operation_id, api_key_id, client_order_id, event::json
FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[])
	WITH ORDINALITY AS r(login, kind, operation_id, api_key_id, client_order_id, event, n)
ORDER BY n`

// queueChangeRows queues rows as one multi-row insert (empty strings and zero keys as NULL).
func queueChangeRows(b *pgx.Batch, rows []changeRow) {
	var (
		logins   = make([]int64, len(rows))
		kinds    = make([]string, len(rows))
		opIDs    = make([]*string, len(rows))
		keyIDs   = make([]*int64, len(rows))
		clientID = make([]*string, len(rows))
		evs      = make([]string, len(rows))
	)
	for i, r := range rows {
		logins[i], kinds[i], evs[i] = r.login, r.kind, string(r.event)
		opIDs[i], keyIDs[i], clientID[i] = nonEmpty(r.operationID), nonZero64(r.apiKeyID), nonEmpty(r.clientOrderID)
	}
	b.Queue(insertChangesSQL, logins, kinds, opIDs, keyIDs, clientID, evs)
}

// frameRow is the change row of an applied fact; ok is false for events that a client does
// not see: commands, outcomes, facts already applied, balance deals (their effect is an
// ACCOUNT_UPDATE) and market orders passing through the book.
func (t *Trading) frameRow(it *tradingItem, owners map[loginTag]tagOwner) (changeRow, bool, error) {
	if !it.applied {
		return changeRow{}, false, nil
	}
	var (
		r   changeRow
		err error
	)
	switch x := it.ev.(type) {
	case *events.DealAdded:
		if !isTrade(x.Action) {
			return r, false, nil
		}
		r = ownedRow(x.Login, ChangeDeal, owners[loginTag{x.Login, tagOf(x.Comment)}])
		r.event, err = dealFrameOf(x, t.digits.get)
	case *events.OrderChanged:
		if query.IsMarketType(x.Type) {
			return r, false, nil
		}
		r = ownedRow(x.Login, ChangeOrderUpdate, owners[loginTag{x.Login, tagOf(x.Comment)}])
		r.event, err = orderFrameOf(x, t.digits.get)
	case *events.PositionChanged:
		r = changeRow{login: x.Login, kind: ChangePositionUpdate}
		r.event, err = positionFrameOf(x, t.digits.get)
	case *events.AccountChanged:
		r = changeRow{login: x.Login, kind: ChangeAccountUpdate}
		r.event, err = accountFrameOf(x)
	default:
		return r, false, nil
	}
	if err != nil {
		return r, false, fmt.Errorf("encode %s frame: %w", r.kind, err)
	}
	return r, true, nil
}

func ownedRow(login int64, kind string, o tagOwner) changeRow {
	return changeRow{login: login, kind: kind, operationID: o.operationID, apiKeyID: o.apiKeyID,
		clientOrderID: o.clientOrderID}
}

// queueTagOwners queues the resolution of the batch's deal and order tags to the operations that
// carry them (read after this batch's commands were applied).
func queueTagOwners(b *pgx.Batch, items []*tradingItem, out map[loginTag]tagOwner) {
	var logins []int64
	var tags []string
	for _, it := range items {
		var login int64
		var comment string
		switch x := it.ev.(type) {
		case *events.DealAdded:
			login, comment = x.Login, x.Comment
		case *events.OrderChanged:
			login, comment = x.Login, x.Comment
		default:
			continue
		}
		if tag := tagOf(comment); tag != "" {
			logins, tags = append(logins, login), append(tags, tag)
		}
	}
	if len(tags) == 0 {
		return
	}
	b.Queue(`SELECT login, tag, operation_id, coalesce(api_key_id, 0), coalesce(client_order_id, '')
		FROM rm.operations WHERE kind IS NOT NULL
		AND (login, tag) IN (SELECT l, t FROM unnest($1::bigint[], $2::text[]) AS x(l, t))`, logins, tags).Query(
		func(rows pgx.Rows) error {
			for rows.Next() {
				var k loginTag
				var o tagOwner
				if err := rows.Scan(&k.login, &k.tag, &o.operationID, &o.apiKeyID, &o.clientOrderID); err != nil {
					return fmt.Errorf("resolve tags: %w", err)
				}
				out[k] = o
			}
			return rows.Err()
		})
}

// frameSymbols lists the symbols the batch's frames are formatted with.
func frameSymbols(items []*tradingItem) []string {
	var out []string
	for _, it := range items {
		switch x := it.ev.(type) {
		case *events.DealAdded:
			out = append(out, x.Symbol)
		case *events.OrderChanged:
			out = append(out, x.Symbol)
		case *events.PositionChanged:
			out = append(out, x.Symbol)
		}
	}
	return out
}
