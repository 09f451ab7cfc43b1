package projections

import (
	"fmt"
	"slices"
	"time"

	json "github.com/goccy/go-json"

	"github.com/jackc/pgx/v5"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/query"
)

// changeRow is one row of rm.changes.
type changeRow struct {
	seq           int64
	login         int64
	kind          string
	operationID   string
	apiKeyID      int64
	clientOrderID string
	event         []byte
	// fact and op are what the row says, for this process's change feed.
	fact events.Event
	op   *query.OperationState
}

// change is the row as the change feed hands it on.
func (r changeRow) change(part int32, at time.Time) query.Change {
	return query.Change{Part: part, Seq: r.seq, Login: r.login, Kind: r.kind, OperationID: r.operationID,
		APIKeyID: r.apiKeyID, ClientOrderID: r.clientOrderID, Fact: r.fact, Operation: r.op, CreatedAt: at}
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

// queueChanges queues the batch's change-feed rows, per partition: the facts it applied, in
// the trade server's order, then an OPERATION row per operation whose visible state changed
// (its derived state: what a waiter answers with). Rows are numbered per partition from
// rm.change_heads, whose row stays locked until commit: a partition's numbers follow its
// commit order, so a reader tailing "seq > last" of a partition never skips a row that
// commits late.
func (t *Trading) queueChanges(b *pgx.Batch, items []*tradingItem, owners map[loginTag]tagOwner, ops []opChange) (map[int32][]changeRow, error) {
	rows := map[int32][]changeRow{}
	partOf := map[int64]int32{} // login → partition: every topic is keyed by login alike
	for _, it := range items {
		partOf[it.ev.(events.AccountEvent).AccountLogin()] = it.part
		if r, ok := factRow(it, owners); ok {
			rows[it.part] = append(rows[it.part], r)
		}
	}
	for _, o := range ops {
		if !o.Visible {
			continue
		}
		st := &query.OperationState{Derived: o.Derived, Version: o.Version, Answered: o.Answered}
		ev, err := json.Marshal(st)
		if err != nil {
			return nil, err
		}
		part := partOf[o.Login]
		rows[part] = append(rows[part], changeRow{login: o.Login, kind: query.ChangeOperation, operationID: o.OperationID,
			event: ev, op: st})
	}
	parts := make([]int32, 0, len(rows))
	for part := range rows {
		parts = append(parts, part)
	}
	slices.Sort(parts) // the heads' row locks, in one order
	for _, part := range parts {
		queueChangeRows(b, part, rows[part])
		if t.notify.needed() {
			queueNotify(b, part, rows[part])
		}
	}
	return rows, nil
}

// insertChangesSQL takes n numbers of the partition's sequence and inserts the rows under
// them, in their order.
const insertChangesSQL = `WITH head AS (
	INSERT INTO rm.change_heads AS h (part, seq) VALUES ($1, $2) ON CONFLICT (part) DO UPDATE SET seq = h.seq + EXCLUDED.seq
	RETURNING seq)
INSERT INTO rm.changes (part, seq, login, kind, operation_id, api_key_id, client_order_id, event)
SELECT $1, (SELECT seq FROM head) - $2 + r.n, r.login, r.kind, r.operation_id, r.api_key_id, r.client_order_id, r.event::json
FROM unnest($3::bigint[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[])
	WITH ORDINALITY AS r(login, kind, operation_id, api_key_id, client_order_id, event, n)
RETURNING seq`

// queueChangeRows queues rows as one multi-row insert (empty strings and zero keys as NULL)
// and sets each row's number when the batch runs.
func queueChangeRows(b *pgx.Batch, part int32, rows []changeRow) {
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
	b.Queue(insertChangesSQL, part, len(rows), logins, kinds, opIDs, keyIDs, clientID, evs).Query(func(res pgx.Rows) error {
		var seqs []int64
		for res.Next() {
			var seq int64
			if err := res.Scan(&seq); err != nil {
				return err
			}
			seqs = append(seqs, seq)
		}
		if err := res.Err(); err != nil {
			return err
		}
		if len(seqs) != len(rows) {
			return fmt.Errorf("change rows: %d numbered, %d written", len(seqs), len(rows))
		}
		slices.Sort(seqs) // the numbers follow the rows' order
		for i := range rows {
			rows[i].seq = seqs[i]
		}
		return nil
	})
}

// announce hands a committed transaction's change rows to this process's change feed; every
// other process's heard of them by the NOTIFYs the transaction sent (queueNotify: the payload
// carries the rows when they fit, so no reader reads them back; a row too large for it makes
// the readers catch up by query). A NOTIFY lost only delays other processes: their feeds
// also poll.
func (t *Trading) announce(rows map[int32][]changeRow) {
	if len(rows) == 0 || t.cfg.Committed == nil {
		return
	}
	now := t.cfg.Now()
	for part, prows := range rows {
		changes := make([]query.Change, len(prows))
		for i, r := range prows {
			changes[i] = r.change(part, now)
		}
		t.cfg.Committed(part, changes)
	}
}

// factRow is the change row of an applied fact: the fact itself, which the user streams
// render; ok is false for events a client does not see: commands, outcomes, facts already
// applied, balance deals (their effect is an ACCOUNT_UPDATE) and market orders passing
// through the book.
func factRow(it *tradingItem, owners map[loginTag]tagOwner) (changeRow, bool) {
	if !it.applied {
		return changeRow{}, false
	}
	r := changeRow{event: it.raw, fact: it.ev}
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

// ownerOf is the owner of the tag of operation r (a command's request).
func ownerOf(r trading.Operation) tagOwner {
	return tagOwner{operationID: r.OperationID, apiKeyID: r.APIKeyID, clientOrderID: r.ClientOrderID}
}

// queueTagOwners resolves the batch's deal and order tags to the operations that carry them:
// from the commands this process applied recently, else by a read queued on b (after this
// batch's commands were applied).
func (t *Trading) queueTagOwners(b *pgx.Batch, items []*tradingItem, out map[loginTag]tagOwner) {
	for _, it := range items { // this batch's own commands
		if r, ok := trading.RequestOf(it.ev); ok {
			out[loginTag{r.Login, r.Tag}] = ownerOf(r)
		}
	}
	var logins []int64
	var tags []string
	for _, it := range items {
		k, ok := ownedFact(it.ev)
		if !ok {
			continue
		}
		if _, ok := out[k]; ok {
			continue
		}
		if o, ok := t.seen.owner(k); ok {
			out[k] = o
			continue
		}
		logins, tags = append(logins, k.login), append(tags, k.tag)
	}
	if len(tags) == 0 {
		return
	}
	b.Queue(tagOwnersSQL, logins, tags).Query(func(rows pgx.Rows) error {
		return scanTagOwners(rows, func(k loginTag, o tagOwner) { out[k] = o })
	})
}

// tagOwnersSQL reads the operations that carry (login, tag) pairs ($1, $2).
const tagOwnersSQL = `SELECT login, tag, operation_id, coalesce(api_key_id, 0), coalesce(client_order_id, '')
	FROM rm.operations WHERE kind IS NOT NULL
	AND (login, tag) IN (SELECT l, t FROM unnest($1::bigint[], $2::text[]) AS x(l, t))`

// scanTagOwners hands each row of tagOwnersSQL to found.
func scanTagOwners(rows pgx.Rows, found func(loginTag, tagOwner)) error {
	defer rows.Close()
	for rows.Next() {
		var k loginTag
		var o tagOwner
		if err := rows.Scan(&k.login, &k.tag, &o.operationID, &o.apiKeyID, &o.clientOrderID); err != nil {
			return fmt.Errorf("resolve tags: %w", err)
		}
		found(k, o)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("resolve tags: %w", err)
	}
	return nil
}
