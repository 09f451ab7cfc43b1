package projections

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/postgres"
)

// opChange is an operation whose derived columns a batch changed.
type opChange struct {
	OperationID string
	Login       int64
	Derived     trading.Derived
	Version     int64
	// Visible: status, code, retcode, orderId or executedVolume changed (an OPERATION row).
	Visible bool
	// Answered: the endpoints that wait have their answer in Derived (Operation.Answered); the
	// OPERATION row says so and only such a row wakes them.
	Answered bool

	changed bool                     // the derived columns changed (the version moves)
	out     *events.ExecutionOutcome // an outcome written with them (foldOutcomes)
}

// touched collects the operations a batch may have changed: by id (commands, outcomes), by
// (login, tag) for deals, by order id for order facts (a pending placement follows its
// order), by position id for positions closed (a full close is FILLED once its position is).
// It is read in the same pipeline that applies the facts, before knowing which of them were
// new: a redelivered fact only re-derives what it cannot change.
type touched struct {
	ids       []string
	tagLogins []int64
	tags      []string
	orders    []int64
	positions []int64
}

func touchedBy(items []*tradingItem) touched {
	var t touched
	for _, it := range items {
		switch x := it.ev.(type) {
		case *events.ExecutionOutcome:
			t.ids = append(t.ids, x.OperationID)
		case *events.DealAdded:
			if tag := trading.TagOf(x.Comment); tag != "" && trading.DealAction(x.Action).IsTrade() {
				t.tagLogins, t.tags = append(t.tagLogins, x.Login), append(t.tags, tag)
			}
		case *events.OrderChanged:
			t.orders = append(t.orders, x.OrderID)
		case *events.PositionChanged:
			if x.Change == events.ChangeClose {
				t.positions = append(t.positions, x.PositionID)
			}
		case *events.AccountChanged:
		default:
			if id := events.CorrelationOf(x); id != "" {
				t.ids = append(t.ids, id)
			}
		}
	}
	return t
}

func (t touched) empty() bool {
	return len(t.ids) == 0 && len(t.tags) == 0 && len(t.orders) == 0 && len(t.positions) == 0
}

// loadOperationsSQL reads each touched operation with what its derivation needs: the sums of
// its tag's distinct trading deals, the order its stored outcome names and the position it
// closes. The order an outcome folded into this transaction names is read by
// foldedOrdersSQL, in the same pipeline (queueLoadOperations).
//
// The touched ids are gathered by a UNION of index lookups first: ORs of the four conditions
// on one scan would read the whole table. The order and the position are lateral lookups by
// key (LIMIT 1 keeps the planner from flattening them into joins): as plain joins, the
// generic plan (made once per connection, KeyedPlans) hashed the whole of rm.orders on every
// execution, a cost that grew with every order placed since the last ANALYZE.
const loadOperationsSQL = `WITH touched AS (
	SELECT operation_id FROM rm.operations WHERE operation_id = ANY($1)
	UNION SELECT o.operation_id FROM unnest($2::bigint[], $3::text[]) AS x(l, t)
		JOIN rm.operations o ON o.login = x.l AND o.tag = x.t
	UNION SELECT operation_id FROM rm.operations WHERE out_order_id = ANY($4)
	UNION SELECT operation_id FROM rm.operations WHERE target_position_id = ANY($5) AND kind = 'CLOSE_POSITION'
)
SELECT o.operation_id, o.login, coalesce(o.kind, ''), coalesce(o.type, ''),
	coalesce(o.symbol, ''), o.volume::text, o.attempt, coalesce(o.requested_at, 0),
	o.out_attempt, coalesce(o.out_status, ''), coalesce(o.out_code, 0), coalesce(o.out_retcode, 0),
	coalesce(o.out_msg, ''), coalesce(o.out_unanswered, false), coalesce(o.out_order_id, 0),
	coalesce(o.out_deal_id, 0), coalesce(o.out_position_id, 0), o.out_price::text, o.out_volume::text,
	coalesce(o.out_decided_at, 0),
	o.status, coalesce(o.code, 0), coalesce(o.retcode, 0), coalesce(o.msg, ''), coalesce(o.order_id, 0),
	coalesce(o.deal_id, 0), coalesce(o.position_id, 0), o.exec_price::text, o.executed_volume::text,
	o.updated_at, o.version, o.deal_count, o.derived_attempt, coalesce(o.derived_decided, false),
	d.n, d.vol::text, d.vp::text, d.price1::text, coalesce(d.deal1, 0), coalesce(d.order1, 0),
	coalesce(d.position1, 0), coalesce(d.last_time, 0), d.symbol1,
	r.open, r.state, r.update_time, p.open
FROM touched JOIN rm.operations o USING (operation_id)
LEFT JOIN LATERAL (
	SELECT count(*) AS n, sum(volume) AS vol, sum(volume * price) AS vp,
		(array_agg(price ORDER BY deal_id))[1] AS price1, min(deal_id) AS deal1,
		(array_agg(order_id ORDER BY deal_id))[1] AS order1,
		(array_agg(position_id ORDER BY deal_id))[1] AS position1, max(time) AS last_time,
		(array_agg(symbol ORDER BY deal_id))[1] AS symbol1
	FROM rm.deals WHERE login = o.login AND tag = o.tag AND action IN (0, 1)) d ON true
LEFT JOIN LATERAL (SELECT r.open, r.state, r.update_time FROM rm.orders r
	WHERE r.order_id = o.out_order_id AND r.login = o.login LIMIT 1) r ON true
LEFT JOIN LATERAL (SELECT p.open FROM rm.positions p
	WHERE p.position_id = o.target_position_id AND p.login = o.login LIMIT 1) p ON true`

// foldedOrdersSQL reads the orders that the outcomes folded into this transaction name.
const foldedOrdersSQL = `SELECT order_id, login, open, state, update_time FROM rm.orders WHERE order_id = ANY($1)`

// loadedOp is one row of loadOperationsSQL: inputs, stored derivation and symbol.
type loadedOp struct {
	id      string
	login   int64
	symbol  string
	in      trading.Inputs
	stored  trading.Derived
	version int64
	// out is an outcome of this transaction that is newer than the stored one: the update
	// writes it with the derived columns (foldOutcomes).
	out *events.ExecutionOutcome
}

// foldOutcomes lays each outcome of items over its loaded operation when it is newer than the
// stored one (the newest attempt's; of one attempt, the one decided last), as the outcome's own
// statement would have stored it: the derivation then reads it, and one update writes the
// outcome and the derived columns together (one write of the row instead of two). It returns
// the outcomes whose operation was not loaded, which are stored by their own statement.
func foldOutcomes(items []*tradingItem, ops []*loadedOp) []*tradingItem {
	byID := make(map[string]*loadedOp, len(ops))
	for _, o := range ops {
		byID[o.id] = o
	}
	var orphans []*tradingItem
	for _, it := range items {
		if !it.folded {
			continue
		}
		out := it.ev.(*events.ExecutionOutcome)
		o, ok := byID[out.OperationID]
		if !ok {
			orphans = append(orphans, it)
			continue
		}
		if st := o.in.Out; st != nil && (st.Attempt > out.Attempt || st.Attempt == out.Attempt && st.DecidedAt == out.DecidedAt) {
			continue // stored already, or older than what is stored
		}
		folded := trading.OutcomeOf(out)
		o.in.Out = &folded
		o.out = out
		it.applied = true
	}
	return orphans
}

// opSymbols lists the symbols of ops (for their digits).
func opSymbols(ops []*loadedOp) []string {
	symbols := make([]string, 0, len(ops))
	for _, o := range ops {
		symbols = append(symbols, o.symbol)
	}
	return symbols
}

// queueDerived recomputes the derived columns of ops, queues one update of those that
// changed and returns them.
func (t *Trading) queueDerived(b *pgx.Batch, ops []*loadedOp) []opChange {
	changes, writes := t.derive(ops)
	if len(writes) > 0 {
		b.Queue(updateDerivedSQL, derivedArgs(writes)...)
	}
	return changes
}

// derive recomputes the derived columns of ops: changes are the operations whose derived
// columns changed, writes those whose row must be written (changed, or an outcome folded in).
func (t *Trading) derive(ops []*loadedOp) (changes, writes []opChange) {
	for _, o := range ops {
		o.in.Digits, o.in.DigitsOK = t.digits.get(o.symbol)
		d := trading.Derive(o.in)
		changed := trading.AnyChange(d, o.stored)
		if !changed && o.out == nil {
			continue
		}
		op := trading.Operation{Kind: o.in.Kind, Type: o.in.Type}
		d.Apply(&op)
		c := opChange{OperationID: o.id, Login: o.login, Derived: d, Version: o.version, out: o.out}
		if changed {
			c.Version++
			c.Visible, c.Answered = trading.VisibleChange(d, o.stored), op.Answered()
			c.changed = true
			changes = append(changes, c)
		}
		writes = append(writes, c)
	}
	return changes, writes
}

// derivedColumns are the arrays derivedArgs gives, in its order: the operation ids, the derived
// columns, whether they changed, and the folded outcome's columns.
var derivedColumns = []factColumn{{"operation_id", "text"}, {"status", "text"}, {"code", "int"}, {"retcode", "int"},
	{"msg", "text"}, {"order_id", "bigint"}, {"deal_id", "bigint"}, {"position_id", "bigint"},
	{"exec_price", "numeric"}, {"executed_volume", "numeric"}, {"updated_at", "bigint"}, {"deal_count", "int"},
	{"derived_attempt", "int"}, {"derived_decided", "boolean"}, {"changed", "boolean"}, {"has_out", "boolean"},
	{"out_attempt", "int"}, {"out_status", "text"}, {"out_code", "int"}, {"out_retcode", "int"},
	{"out_msg", "text"}, {"out_unanswered", "boolean"}, {"out_order_id", "bigint"}, {"out_deal_id", "bigint"},
	{"out_position_id", "bigint"}, {"out_price", "numeric"}, {"out_volume", "numeric"}, {"out_decided_at", "bigint"}}

// derivedUnnest is the rows of derivedArgs from parameter $from on, as u(derivedColumns).
func derivedUnnest(from int) string {
	params, names := derivedParams(from)
	return "unnest(" + params + ")\n\tAS u(" + names + ")"
}

// derivedParams are derivedArgs' parameters from $from on, typed, and derivedColumns' names.
func derivedParams(from int) (params, names string) {
	ps, ns := make([]string, len(derivedColumns)), make([]string, len(derivedColumns))
	for i, c := range derivedColumns {
		ps[i], ns[i] = fmt.Sprintf("$%d::%s[]", from+i, c.typ), c.name
	}
	return strings.Join(ps, ", "), strings.Join(ns, ", ")
}

// updateDerivedSQL writes the derived columns of several operations in one statement, and the
// outcome folded into the same write where there is one (the touched operations of a batch are
// distinct; zero codes and ids, empty texts are NULL; the version moves only when the derived
// columns changed).
var updateDerivedSQL = `UPDATE rm.operations o SET status = u.status, code = u.code, retcode = u.retcode,
	msg = u.msg, order_id = u.order_id, deal_id = u.deal_id, position_id = u.position_id,
	exec_price = u.exec_price, executed_volume = u.executed_volume, updated_at = u.updated_at,
	deal_count = u.deal_count, derived_attempt = u.derived_attempt, derived_decided = u.derived_decided,
	version = o.version + CASE WHEN u.changed THEN 1 ELSE 0 END,
	out_attempt = CASE WHEN u.has_out THEN u.out_attempt ELSE o.out_attempt END,
	out_status = CASE WHEN u.has_out THEN u.out_status ELSE o.out_status END,
	out_code = CASE WHEN u.has_out THEN u.out_code ELSE o.out_code END,
	out_retcode = CASE WHEN u.has_out THEN u.out_retcode ELSE o.out_retcode END,
	out_msg = CASE WHEN u.has_out THEN u.out_msg ELSE o.out_msg END,
	out_unanswered = CASE WHEN u.has_out THEN u.out_unanswered ELSE o.out_unanswered END,
	out_order_id = CASE WHEN u.has_out THEN u.out_order_id ELSE o.out_order_id END,
	out_deal_id = CASE WHEN u.has_out THEN u.out_deal_id ELSE o.out_deal_id END,
	out_position_id = CASE WHEN u.has_out THEN u.out_position_id ELSE o.out_position_id END,
	out_price = CASE WHEN u.has_out THEN u.out_price ELSE o.out_price END,
	out_volume = CASE WHEN u.has_out THEN u.out_volume ELSE o.out_volume END,
	out_decided_at = CASE WHEN u.has_out THEN u.out_decided_at ELSE o.out_decided_at END
FROM ` + derivedUnnest(1) + `
WHERE o.operation_id = u.operation_id`

// insertOperations inserts a fresh batch's operations (trading_fresh.go) with their derived
// columns and folded outcomes: the command's columns (commandTable's) as text arrays, then
// derivedArgs aligned with them (alignDerived: a zero change for an operation whose row holds
// no more than a command's, whose empty status and false flags give the columns' defaults, as
// the command's own insert gives them). One write of each row, where the command's insert and the derivation's update wrote it
// twice (an update that moves an indexed column is a new row version and an entry in every
// index). One unnest of both, not a join of two: with hash joins off (KeyedPlans) a join of
// the derived rows to the commands rescanned them once per command, a cost that grew with the
// square of the batch (124 ms for 74 operations; a third of Postgres' statement time at 1,000
// orders/s).
var insertOperations = postgres.NewRowsStatement(func(one bool) string {
	return insertOperationsHead + insertOperationsFrom(one)
})

// insertOperationsHead is insertOperations without its rows.
var insertOperationsHead = `INSERT INTO rm.operations (` + commandTable.list + `, status, code, retcode, msg,
	order_id, deal_id, position_id, exec_price, executed_volume, updated_at, deal_count, derived_attempt,
	derived_decided, version, out_attempt, out_status, out_code, out_retcode, out_msg, out_unanswered, out_order_id,
	out_deal_id, out_position_id, out_price, out_volume, out_decided_at)
SELECT ` + commandTable.typed + `, coalesce(nullif(u.status, ''), 'ACCEPTED'), u.code, u.retcode, u.msg,
	u.order_id, u.deal_id, u.position_id, u.exec_price, u.executed_volume, coalesce(u.updated_at, 0),
	coalesce(u.deal_count, 0), coalesce(u.derived_attempt, 0), coalesce(u.derived_decided, false),
	CASE WHEN u.changed THEN 1 ELSE 0 END,
	CASE WHEN u.has_out THEN u.out_attempt END, CASE WHEN u.has_out THEN u.out_status END,
	CASE WHEN u.has_out THEN u.out_code END, CASE WHEN u.has_out THEN u.out_retcode END,
	CASE WHEN u.has_out THEN u.out_msg END, CASE WHEN u.has_out THEN u.out_unanswered END,
	CASE WHEN u.has_out THEN u.out_order_id END, CASE WHEN u.has_out THEN u.out_deal_id END,
	CASE WHEN u.has_out THEN u.out_position_id END, CASE WHEN u.has_out THEN u.out_price END,
	CASE WHEN u.has_out THEN u.out_volume END, CASE WHEN u.has_out THEN u.out_decided_at END
FROM `

// insertOperationsFrom is insertOperations' rows: the command's arrays and derivedArgs'
// in one unnest, as u(c1, …, derivedColumns); one: of one operation, as scalars (postgres.OneRow).
func insertOperationsFrom(one bool) string {
	params, names := derivedParams(commandTable.cols + 1)
	return postgres.Rows(commandTable.params+", "+params, "u", commandTable.raw+", "+names, one)
}

// alignDerived lines derived up with the operation ids of a fresh batch's commands (the first
// column of their rows, commandTable.args): the change of each command's operation, the zero
// change where there is none.
func alignDerived(ids []*string, derived []opChange) []opChange {
	byID := make(map[string]int, len(derived))
	for i := range derived {
		if _, dup := byID[derived[i].OperationID]; !dup {
			byID[derived[i].OperationID] = i
		}
	}
	aligned := make([]opChange, len(ids))
	for i, id := range ids {
		if id == nil {
			continue
		}
		if j, ok := byID[*id]; ok {
			aligned[i] = derived[j]
		}
	}
	return aligned
}

// derivedArgs are the arrays of updateDerivedSQL and insertOperations: the operation ids,
// then one per derived column (derivedColumns).
func derivedArgs(changes []opChange) []any {
	n := len(changes)
	var (
		ids, statuses                  = make([]string, n), make([]string, n)
		codes, retcodes                = make([]*int32, n), make([]*int32, n)
		msgs                           = make([]*string, n)
		orderIDs, dealIDs, positionIDs = make([]*int64, n), make([]*int64, n), make([]*int64, n)
		prices, volumes                = make([]*string, n), make([]*string, n)
		updated                        = make([]int64, n)
		deals, attempts                = make([]int32, n), make([]int32, n)
		decided, changed               = make([]bool, n), make([]bool, n)

		hasOut                            = make([]bool, n)
		outAttempts                       = make([]*int32, n)
		outStatuses, outMsgs              = make([]*string, n), make([]*string, n)
		outCodes, outRetcodes             = make([]*int32, n), make([]*int32, n)
		outUnanswered                     = make([]*bool, n)
		outOrders, outDeals, outPositions = make([]*int64, n), make([]*int64, n), make([]*int64, n)
		outPrices, outVolumes             = make([]*string, n), make([]*string, n)
		outDecided                        = make([]*int64, n)
	)
	for i, c := range changes {
		d := c.Derived
		ids[i], statuses[i], updated[i], decided[i], changed[i] = c.OperationID, string(d.Status), d.UpdatedAt, d.Decided, c.changed
		deals[i], attempts[i], hasOut[i] = int32(d.Deals), int32(d.Attempt), c.out != nil
		codes[i], retcodes[i] = nonZero32(d.Code), nonZero32(d.Retcode)
		msgs[i], prices[i], volumes[i] = nonEmpty(d.Msg), decpOrNull(d.ExecPrice), decpOrNull(d.ExecutedVolume)
		orderIDs[i], dealIDs[i], positionIDs[i] = nonZero64(d.OrderID), nonZero64(d.DealID), nonZero64(d.PositionID)
		if x := c.out; x != nil {
			a, st, un, at := int32(x.Attempt), x.Status, x.Unanswered, x.DecidedAt
			outAttempts[i], outStatuses[i], outUnanswered[i], outDecided[i] = &a, &st, &un, &at
			outCodes[i], outRetcodes[i], outMsgs[i] = nonZero32(x.Code), nonZero32(x.Retcode), nonEmpty(x.Msg)
			outOrders[i], outDeals[i], outPositions[i] = nonZero64(x.OrderID), nonZero64(x.DealID), nonZero64(x.Position)
			outPrices[i], outVolumes[i] = decpOrNull(x.Price), decpOrNull(x.Volume)
		}
	}
	return []any{ids, statuses, codes, retcodes, msgs, orderIDs, dealIDs, positionIDs, prices, volumes,
		updated, deals, attempts, decided, changed, hasOut, outAttempts, outStatuses, outCodes, outRetcodes, outMsgs,
		outUnanswered, outOrders, outDeals, outPositions, outPrices, outVolumes, outDecided}
}

// The array forms of nullText, nullInt and nullInt64 (decimals: decpOrNull): nil is NULL.
func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonZero32(n int) *int32 {
	if n == 0 {
		return nil
	}
	v := int32(n)
	return &v
}

func nonZero64(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

// queueLoadOperations queues the read of the touched operations into *ops; folded are the
// outcomes this transaction writes with the derived columns (foldOutcomes). Of the outcomes
// of one operation it keeps the one foldOutcomes keeps (of the newest attempt, the last): a
// transaction may hold two (an outcome and its settlement, or the reconciled copy a
// redelivered command makes). When that outcome is not older than the stored one, the order
// the derivation reads is the one it names (when it names one), read in the same pipeline;
// else the stored outcome's. Matching the two in Go keeps every statement a lookup by key: a
// join of the loaded rows to the folded outcomes would rescan them once per row (hash joins
// are off, KeyedPlans).
func queueLoadOperations(b *pgx.Batch, tc touched, folded []*events.ExecutionOutcome, ops *[]*loadedOp) {
	newest := make(map[string]*events.ExecutionOutcome, len(folded))
	var orderIDs []int64
	for _, out := range folded {
		if n, seen := newest[out.OperationID]; seen && out.Attempt < n.Attempt {
			continue
		}
		newest[out.OperationID] = out
	}
	for _, out := range newest {
		if out.OrderID != 0 {
			orderIDs = append(orderIDs, out.OrderID)
		}
	}
	b.Queue(loadOperationsSQL, tc.ids, tc.tagLogins, tc.tags, tc.orders, tc.positions).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			o, err := scanLoadedOp(rows)
			if err != nil {
				return fmt.Errorf("load operations: %w", err)
			}
			*ops = append(*ops, o)
		}
		return rows.Err()
	})
	if len(orderIDs) == 0 {
		return
	}
	b.Queue(foldedOrdersSQL, orderIDs).Query(func(rows pgx.Rows) error {
		type orderKey struct{ id, login int64 }
		orders := make(map[orderKey]*trading.PendingOrder, len(orderIDs))
		for rows.Next() {
			var k orderKey
			var state int
			r := &trading.PendingOrder{}
			if err := rows.Scan(&k.id, &k.login, &r.Open, &state, &r.UpdateTime); err != nil {
				return fmt.Errorf("load the orders of outcomes: %w", err)
			}
			r.State = trading.OrderState(state)
			orders[k] = r
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("load the orders of outcomes: %w", err)
		}
		for _, o := range *ops {
			out := newest[o.id]
			if out == nil || out.OrderID == 0 || o.in.Out != nil && o.in.Out.Attempt > out.Attempt {
				continue
			}
			o.in.Order = orders[orderKey{out.OrderID, o.login}]
		}
		return nil
	})
}

func scanLoadedOp(rows pgx.Rows) (*loadedOp, error) {
	o := &loadedOp{}
	var (
		volume, outPrice, outVolume, execPrice, execVolume *string
		outAttempt                                         *int
		out                                                trading.Outcome
		n                                                  int64
		fillVol, fillVP, price1, dealSymbol                *string
		orderOpen, positionOpen                            *bool
		orderState                                         *int
		orderUpdate                                        *int64
	)
	in := &o.in
	st := &o.stored
	if err := rows.Scan(&o.id, &o.login, &in.Kind, &in.Type, &o.symbol, &volume, &in.Attempt, &in.RequestedAt,
		&outAttempt, &out.Status, &out.Code, &out.Retcode, &out.Msg, &out.Unanswered, &out.OrderID, &out.DealID,
		&out.PositionID, &outPrice, &outVolume, &out.DecidedAt,
		&st.Status, &st.Code, &st.Retcode, &st.Msg, &st.OrderID, &st.DealID, &st.PositionID, &execPrice, &execVolume,
		&st.UpdatedAt, &o.version, &st.Deals, &st.Attempt, &st.Decided,
		&n, &fillVol, &fillVP, &price1, &in.Fills.DealID, &in.Fills.OrderID, &in.Fills.PositionID, &in.Fills.LastTime,
		&dealSymbol, &orderOpen, &orderState, &orderUpdate, &positionOpen); err != nil {
		return nil, err
	}
	var err error
	if in.Volume, err = parseOptional(volume); err != nil {
		return nil, err
	}
	if outAttempt != nil {
		out.Attempt = *outAttempt
		if out.Price, err = parseOptional(outPrice); err != nil {
			return nil, err
		}
		if out.Volume, err = parseOptional(outVolume); err != nil {
			return nil, err
		}
		in.Out = &out
	}
	if st.ExecPrice, err = parseOptional(execPrice); err != nil {
		return nil, err
	}
	if st.ExecutedVolume, err = parseOptional(execVolume); err != nil {
		return nil, err
	}
	in.Fills.Count = int(n)
	if n > 0 {
		if err := parseColumns([]string{deref(fillVol), deref(fillVP), deref(price1)},
			&in.Fills.Volume, &in.Fills.VolumePrice, &in.Fills.FirstPrice); err != nil {
			return nil, err
		}
	}
	if o.symbol == "" && dealSymbol != nil {
		o.symbol = *dealSymbol // a skeleton row: its deals name the symbol
	}
	if orderOpen != nil {
		in.Order = &trading.PendingOrder{Open: *orderOpen, State: trading.OrderState(*orderState), UpdateTime: *orderUpdate}
	}
	in.PositionClosed = positionOpen != nil && !*positionOpen
	return o, nil
}

func parseOptional(s *string) (*apd.Decimal, error) {
	if s == nil {
		return nil, nil
	}
	d, err := dec.Parse(*s)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
