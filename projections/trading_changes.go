package projections

import (
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"tradesvc/events"
	"tradesvc/events/trading"
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

// operationRow is the event of an OPERATION change: it wakes RESULT waiters; version orders
// the states of one operation.
type operationRow struct {
	Status   string `json:"status"`
	Version  int64  `json:"version"`
	Answered bool   `json:"answered"`
}

// queueChanges queues the batch's change-feed rows: the facts it applied, in
// the trade server's order, then an OPERATION row per operation whose visible state changed.
// Rows are inserted under the change-feed lock (seq order is commit order) and announced
// with NOTIFY, which Postgres delivers at commit.
func (t *Trading) queueChanges(b *pgx.Batch, items []*tradingItem, owners map[loginTag]tagOwner, ops []opChange) error {
	rows := make([]changeRow, 0, len(items)+len(ops))
	for _, it := range items {
		if r, ok := factRow(it, owners); ok {
			rows = append(rows, r)
		}
	}
	for _, o := range ops {
		if !o.Visible {
			continue
		}
		ev, err := json.Marshal(operationRow{Status: string(o.Derived.Status), Version: o.Version, Answered: o.Answered})
		if err != nil {
			return err
		}
		rows = append(rows, changeRow{login: o.Login, kind: query.ChangeOperation, operationID: o.OperationID, event: ev})
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

// factRow is the change row of an applied fact: the fact itself, which the user streams
// render; ok is false for events a client does not see: commands, outcomes, facts already
// applied, balance deals (their effect is an ACCOUNT_UPDATE) and market orders passing
// through the book.
func factRow(it *tradingItem, owners map[loginTag]tagOwner) (changeRow, bool) {
	if !it.applied {
		return changeRow{}, false
	}
	r := changeRow{event: it.raw}
	switch x := it.ev.(type) {
	case *events.DealAdded:
		if !trading.DealAction(x.Action).IsTrade() {
			return r, false
		}
		r.own(x.Login, query.ChangeDeal, owners[loginTag{x.Login, trading.TagOf(x.Comment)}])
	case *events.OrderChanged:
		if trading.OrderType(x.Type).IsMarket() {
			return r, false
		}
		r.own(x.Login, query.ChangeOrderUpdate, owners[loginTag{x.Login, trading.TagOf(x.Comment)}])
	case *events.PositionChanged:
		r.login, r.kind = x.Login, query.ChangePositionUpdate
	case *events.AccountChanged:
		r.login, r.kind = x.Login, query.ChangeAccountUpdate
	default:
		return r, false
	}
	return r, true
}

// own makes r a row of login and kind, owned by the operation whose tag its fact carries.
func (r *changeRow) own(login int64, kind string, o tagOwner) {
	r.login, r.kind, r.operationID, r.apiKeyID, r.clientOrderID = login, kind, o.operationID, o.apiKeyID, o.clientOrderID
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
		if tag := trading.TagOf(comment); tag != "" {
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
