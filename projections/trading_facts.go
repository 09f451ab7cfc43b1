package projections

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/postgres"
)

// The raw facts of the trading projection: every event changes at most one row and only
// forward (seq for trade-server facts, attempt for commands and outcomes), so a redelivered
// or replayed event changes nothing and reports no row affected.

// statements are the statements of the outcomes the projection applies, one per event, by
// event type; with factTables (the trade-server facts and the commands, set-wise), what it
// handles (TradingCoverage).
var statements = map[string]func(events.Event) (string, []any){
	(*events.ExecutionOutcome)(nil).EventType(): func(e events.Event) (string, []any) {
		return outcomeStatement(e.(*events.ExecutionOutcome))
	},
}

// factStatement is the statement that applies e; ok is false for events the projection does
// not apply.
func factStatement(e events.Event) (string, []any, bool) {
	st, ok := statements[e.EventType()]
	if !ok {
		return "", nil, false
	}
	sql, args := st(e)
	return sql, args, true
}

// factTables apply the trade-server facts of a transaction set-wise: one statement per table
// for all of them, whatever their number (a statement per fact made the projection's database
// connection the bottleneck of the order path under load). Each row moves only forward, as a
// statement per fact in their order would have moved it, and the statement returns which
// facts did (those change the read model and get change rows). Every command event has one
// too (commandTable: the operation row it starts).
var factTables = func() map[string]*factTable {
	m := map[string]*factTable{
		(*events.DealAdded)(nil).EventType(): newFactTable(factSpec{table: "rm.deals", key: "deal_id", forward: false,
			cols: []factColumn{{"deal_id", "bigint"}, {"login", "bigint"}, {"order_id", "bigint"}, {"position_id", "bigint"},
				{"symbol", "text"}, {"action", "integer"}, {"entry", "integer"}, {"reason", "integer"}, {"volume", "numeric"},
				{"price", "numeric"}, {"profit", "numeric"}, {"commission", "numeric"}, {"swap", "numeric"},
				{"comment", "text"}, {"tag", "text"}, {"time", "bigint"}, {"seq", "bigint"}},
			row: func(e events.Event) []*string {
				x := e.(*events.DealAdded)
				return []*string{i64(x.DealID), i64(x.Login), i64(x.OrderID), i64(x.PositionID), &x.Symbol,
					i64(int64(x.Action)), i64(int64(x.Entry)), i64(int64(x.Reason)), decp(x.Volume), decp(x.Price),
					decp(x.Profit), decp(x.Commission), decp(x.Swap), &x.Comment, nullText(trading.TagOf(x.Comment)),
					i64(x.Time), i64(int64(x.Seq))}
			}}),
		(*events.OrderChanged)(nil).EventType(): newFactTable(factSpec{table: "rm.orders", key: "order_id", forward: true,
			cols: []factColumn{{"order_id", "bigint"}, {"login", "bigint"}, {"symbol", "text"}, {"type", "integer"},
				{"state", "integer"}, {"volume_initial", "numeric"}, {"volume_current", "numeric"}, {"price", "numeric"},
				{"stop_limit_price", "numeric"}, {"sl", "numeric"}, {"tp", "numeric"}, {"type_time", "integer"},
				{"expiration", "bigint"}, {"comment", "text"}, {"tag", "text"}, {"position_id", "bigint"},
				{"time_setup", "bigint"}, {"time_done", "bigint"}, {"update_time", "bigint"}, {"open", "boolean"},
				{"seq", "bigint"}},
			row: func(e events.Event) []*string {
				x := e.(*events.OrderChanged)
				return []*string{i64(x.OrderID), i64(x.Login), &x.Symbol, i64(int64(x.Type)), i64(int64(x.State)),
					decp(x.VolumeInitial), decp(x.VolumeCurrent), decp(x.Price), decp(x.StopLimitPrice), decp(x.SL),
					decp(x.TP), i64(int64(x.TypeTime)), i64(x.Expiration), &x.Comment, nullText(trading.TagOf(x.Comment)),
					i64OrNull(x.PositionID), i64(x.TimeSetup), i64OrNull(x.TimeDone), i64(x.Time),
					boolp(x.Change != events.ChangeDelete), i64(int64(x.Seq))}
			}}),
		(*events.PositionChanged)(nil).EventType(): newFactTable(factSpec{table: "rm.positions", key: "position_id", forward: true,
			cols: []factColumn{{"position_id", "bigint"}, {"login", "bigint"}, {"symbol", "text"}, {"direction", "integer"},
				{"volume", "numeric"}, {"price_open", "numeric"}, {"sl", "numeric"}, {"tp", "numeric"},
				{"profit", "numeric"}, {"swap", "numeric"}, {"comment", "text"}, {"tag", "text"}, {"time_open", "bigint"},
				{"update_time", "bigint"}, {"open", "boolean"}, {"seq", "bigint"}},
			row: func(e events.Event) []*string {
				x := e.(*events.PositionChanged)
				return []*string{i64(x.PositionID), i64(x.Login), &x.Symbol, i64(int64(x.Direction)), decp(x.Volume),
					decp(x.PriceOpen), decp(x.SL), decp(x.TP), decp(x.Profit), decp(x.Swap), &x.Comment,
					nullText(trading.TagOf(x.Comment)), i64(x.TimeOpen), i64(x.Time),
					boolp(x.Change != events.ChangeClose), i64(int64(x.Seq))}
			}}),
		(*events.AccountChanged)(nil).EventType(): newFactTable(factSpec{table: "rm.account_balances", key: "login", forward: true,
			cols: []factColumn{{"login", "bigint"}, {"balance", "numeric"}, {"credit", "numeric"}, {"update_time", "bigint"},
				{"seq", "bigint"}},
			row: func(e events.Event) []*string {
				x := e.(*events.AccountChanged)
				return []*string{i64(x.Login), decp(x.Balance), decp(x.Credit), i64(x.Time), i64(int64(x.Seq))}
			}}),
	}
	for _, k := range trading.Kinds() {
		m[k.Command()] = commandTable
	}
	return m
}()

// commandTable inserts the operations that command events start, or completes the rows that
// outcomes created first (kind still NULL); a command of a newer attempt raises the attempt
// (which resets the older attempt's outcome), a redelivered one changes nothing. The attempt
// orders the commands of one operation as seq orders facts; a row without kind counts as
// none stored.
var commandTable = newFactTable(factSpec{table: "rm.operations", key: "operation_id", forward: true,
	seq: "attempt", storedSeq: "CASE WHEN kind IS NULL THEN NULL ELSE attempt END",
	moves: "rm.operations.kind IS NULL OR rm.operations.attempt < EXCLUDED.attempt", fixed: []string{"login", "tag"},
	cols: []factColumn{{"operation_id", "text"}, {"login", "bigint"}, {"tag", "text"}, {"kind", "text"},
		{"api_key_id", "bigint"}, {"client_order_id", "text"}, {"attempt", "integer"}, {"requested_at", "bigint"},
		{"symbol", "text"}, {"side", "text"}, {"type", "text"}, {"volume", "numeric"}, {"price", "numeric"},
		{"stop_limit_price", "numeric"}, {"sl", "numeric"}, {"tp", "numeric"}, {"time_in_force", "text"},
		{"expiration", "bigint"}, {"comment", "text"}, {"target_order_id", "bigint"}, {"target_position_id", "bigint"},
		{"sweep_id", "text"}},
	row: func(e events.Event) []*string {
		r, _ := trading.RequestOf(e)
		kind := string(r.Kind)
		return []*string{&r.OperationID, i64(r.Login), &r.Tag, &kind, i64(r.APIKeyID),
			&r.ClientOrderID, i64(int64(r.Attempt)), i64(r.RequestedAt), nullText(r.Symbol), nullText(r.Side),
			nullText(r.Type), decpOrNull(r.Volume), decpOrNull(r.Price), decpOrNull(r.StopLimitPrice), decpOrNull(r.SL),
			decpOrNull(r.TP), nullText(r.TimeInForce), i64OrNull(r.Expiration), nullText(r.Comment),
			i64OrNull(r.TargetOrderID), i64OrNull(r.TargetPositionID), nullText(r.SweepID)}
	}})

// factTable is one read-model table of facts and its set-wise statement.
type factTable struct {
	sql  string
	cols int
	row  func(events.Event) []*string // the fact's columns as text (nil: NULL)
	// insert inserts rows that must be new (a fresh batch's, trading_fresh.go): a row
	// stored already fails it with a unique violation, which makes it its own fence. Both
	// forms, over arrays and over one row (postgres.RowsStatement).
	insert postgres.RowsStatement
	// list, typed and from are insert's pieces: the columns, their values (each text cast
	// to its column's type) and the arrays they come from, x(c1, c2, …), for a statement that
	// inserts more besides (insertOperations).
	list, typed, from string
	// params and raw are from's pieces: the typed parameters and the columns x(c1, c2, …).
	params, raw string
	// upsert writes a fresh batch's newest fact of each key of a forward table of facts
	// (queueFresh, when fresh): an insert that replaces the stored row where it is older.
	upsert postgres.RowsStatement
	fresh  bool
	// key is the position of the key among the columns (forward tables).
	key int
}

type factColumn struct{ name, typ string }

// factSpec describes a set-wise statement (newFactTable): a table keyed by key. forward: a row
// replaces the stored one when it is newer (else a row is inserted once and never changed).
type factSpec struct {
	table, key string
	forward    bool
	cols       []factColumn
	row        func(events.Event) []*string
	// seq is the input column that orders the rows of one key (default "seq"); storedSeq the
	// expression of a stored row's (default seq; NULL: as if none were stored); moves the
	// condition under which a row replaces the stored one (default: its seq is newer).
	seq, storedSeq, moves string
	// fixed are columns an update leaves as they are (besides the key).
	fixed []string
}

// newFactTable builds the statement of f. The statement takes one text array per
// column, the rows in their order, and returns the ordinal (from 1) of each row that moved
// its stored row: newer than the stored row and than every earlier row of the same key in the
// array (a statement per row, in order, would have moved the row for those). Only the newest
// row of a key is written (the first, for insert-once tables).
func newFactTable(f factSpec) *factTable {
	table, key := f.table, f.key
	seq := cmp.Or(f.seq, "seq")
	storedSeq := cmp.Or(f.storedSeq, "seq")
	moves := cmp.Or(f.moves, table+".seq < EXCLUDED.seq")
	var params, raw, names, typed, set []string
	for i, c := range f.cols {
		params = append(params, fmt.Sprintf("$%d::text[]", i+1))
		raw = append(raw, fmt.Sprintf("c%d", i+1))
		names = append(names, c.name)
		typed = append(typed, fmt.Sprintf("c%d::%s AS %s", i+1, c.typ, c.name))
		if c.name != key && !slices.Contains(f.fixed, c.name) {
			set = append(set, c.name+" = EXCLUDED."+c.name)
		}
	}
	list := strings.Join(names, ", ")
	sql := `WITH input AS (SELECT ` + strings.Join(typed, ", ") + `, ord FROM unnest(` + strings.Join(params, ", ") +
		`) WITH ORDINALITY AS x(` + strings.Join(raw, ", ") + `, ord)),`
	// The stored row of each key, as it was before this statement (its INSERT is not visible
	// to the rest of it): a lookup by key per row of the batch, never a scan of a CTE per row.
	stored := `LEFT JOIN (SELECT ` + key + ` AS k, ` + storedSeq + ` AS seq FROM ` + table + `) stored ON stored.k = ranked.` + key
	if f.forward {
		sql += `
	ranked AS (SELECT input.*, max(` + seq + `) OVER (PARTITION BY ` + key + ` ORDER BY ord ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before,
		row_number() OVER (PARTITION BY ` + key + ` ORDER BY ` + seq + ` DESC, ord) AS pick FROM input),
	written AS (INSERT INTO ` + table + ` (` + list + `) SELECT ` + list + ` FROM ranked WHERE pick = 1
		ON CONFLICT (` + key + `) DO UPDATE SET ` + strings.Join(set, ", ") + `
		WHERE ` + moves + `)
SELECT ord FROM ranked ` + stored + `
WHERE ranked.` + seq + ` > greatest(coalesce(stored.seq, -1), coalesce(ranked.before, -1))`
	} else {
		sql += `
	ranked AS (SELECT input.*, row_number() OVER (PARTITION BY ` + key + ` ORDER BY ord) AS pick FROM input),
	written AS (INSERT INTO ` + table + ` (` + list + `) SELECT ` + list + ` FROM ranked WHERE pick = 1
		ON CONFLICT (` + key + `) DO NOTHING)
SELECT ord FROM ranked ` + stored + `
WHERE ranked.pick = 1 AND stored.k IS NULL`
	}
	ft := &factTable{sql: sql, cols: len(f.cols), row: f.row, list: list, typed: strings.Join(typed, ", "),
		params: strings.Join(params, ", "), raw: strings.Join(raw, ", ")}
	ft.from = postgres.Rows(ft.params, "x", ft.raw, false)
	insert := func(one bool) string {
		return `INSERT INTO ` + table + ` (` + list + `) SELECT ` + ft.typed + ` FROM ` + postgres.Rows(ft.params, "x", ft.raw, one)
	}
	ft.insert = postgres.NewRowsStatement(insert)
	if f.forward && f.seq == "" { // the trade-server facts' tables (queueFresh orders them by events.FactSeq)
		ft.key, ft.fresh = slices.IndexFunc(f.cols, func(c factColumn) bool { return c.name == key }), true
		upsert := ` ON CONFLICT (` + key + `) DO UPDATE SET ` + strings.Join(set, ", ") + ` WHERE ` + moves
		ft.upsert = postgres.NewRowsStatement(func(one bool) string { return insert(one) + upsert })
	}
	return ft
}

// queueRows queues s for a number of rows given as args (columns of text, argsOf, and more
// arrays of as many elements): a fresh batch of one order, the RESULT path, is not packed
// into arrays (postgres.RowsStatement).
func queueRows(b *pgx.Batch, s postgres.RowsStatement, args []any, rows int) {
	sql, args := s.For(rows, args)
	b.Queue(sql, args...)
}

// args are the statement's arguments for items: one text array per column.
func (f *factTable) args(items []*tradingItem) []any {
	rows := make([][]*string, len(items))
	for j, it := range items {
		rows[j] = f.row(it.ev)
	}
	return f.argsOf(rows)
}

// argsOf are the statement's arguments for rows (f.row's): one text array per column.
func (f *factTable) argsOf(rows [][]*string) []any {
	cols := make([][]*string, f.cols)
	for i := range cols {
		cols[i] = make([]*string, len(rows))
	}
	for j, r := range rows {
		for i, v := range r {
			cols[i][j] = v
		}
	}
	args := make([]any, len(cols))
	for i, c := range cols {
		args[i] = c
	}
	return args
}

// queueInsert queues the insert of items, rows that must be new (insert).
func (f *factTable) queueInsert(b *pgx.Batch, items []*tradingItem) {
	queueRows(b, f.insert, f.args(items), len(items))
}

// queueFresh queues the write of a fresh batch's facts of a forward table: of each key, the
// fact with the highest seq (the first of equal ones), as f.sql writes it. What sql does
// besides, it need not: the batch's fence holds every stored row older than each of its facts,
// so the newest fact of a key always replaces the stored row, and which facts moved a row
// (it.applied) was known when the batch was planned (planFresh). So one plain insert, without
// the window functions that rank the facts of a key and the lookup that compares them with the
// stored row (about 30 µs of Postgres' time a statement, of one row).
func (f *factTable) queueFresh(b *pgx.Batch, items []*tradingItem) {
	var rows [][]*string
	var seqs []uint64
	at := map[string]int{}
	for _, it := range items {
		r := f.row(it.ev)
		seq, _ := events.FactSeq(it.ev) // a trade-server fact: the forward tables are theirs
		k := *r[f.key]
		if i, ok := at[k]; !ok {
			at[k] = len(rows)
			rows, seqs = append(rows, r), append(seqs, seq)
		} else if seq > seqs[i] {
			rows[i], seqs[i] = r, seq
		}
	}
	queueRows(b, f.upsert, f.argsOf(rows), len(rows))
}

// queue queues the statement that applies items (facts of this table, in their order) and
// marks those that moved a row as applied when the batch runs.
func (f *factTable) queue(b *pgx.Batch, items []*tradingItem) {
	b.Queue(f.sql, f.args(items)...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var ord int64
			if err := rows.Scan(&ord); err != nil {
				return err
			}
			if ord < 1 || ord > int64(len(items)) {
				return fmt.Errorf("%d facts, applied ordinal %d", len(items), ord)
			}
			items[ord-1].applied = true
		}
		return rows.Err()
	})
}

func i64(n int64) *string {
	s := strconv.FormatInt(n, 10)
	return &s
}

func i64OrNull(n int64) *string {
	if n == 0 {
		return nil
	}
	return i64(n)
}

// decpOrNull is d as text, NULL when nil.
func decpOrNull(d *apd.Decimal) *string {
	if d == nil {
		return nil
	}
	return decp(*d)
}

func decp(d apd.Decimal) *string {
	s := dec.String(d)
	return &s
}

func boolp(b bool) *string {
	s := strconv.FormatBool(b)
	return &s
}

// outcomeStatement stores the outcome of the newest attempt seen; a row that does not exist
// yet (the outcome came before its command) is created as a skeleton the command completes.
func outcomeStatement(x *events.ExecutionOutcome) (string, []any) {
	return `INSERT INTO rm.operations (operation_id, login, tag, out_attempt, out_status, out_code, out_retcode,
		out_msg, out_unanswered, out_order_id, out_deal_id, out_position_id, out_price, out_volume, out_decided_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::numeric, $14::numeric, $15)
		ON CONFLICT (operation_id) DO UPDATE SET out_attempt = EXCLUDED.out_attempt,
		out_status = EXCLUDED.out_status, out_code = EXCLUDED.out_code, out_retcode = EXCLUDED.out_retcode,
		out_msg = EXCLUDED.out_msg, out_unanswered = EXCLUDED.out_unanswered, out_order_id = EXCLUDED.out_order_id,
		out_deal_id = EXCLUDED.out_deal_id, out_position_id = EXCLUDED.out_position_id,
		out_price = EXCLUDED.out_price, out_volume = EXCLUDED.out_volume, out_decided_at = EXCLUDED.out_decided_at
		WHERE rm.operations.out_attempt IS NULL OR rm.operations.out_attempt < EXCLUDED.out_attempt
		   OR (rm.operations.out_attempt = EXCLUDED.out_attempt AND rm.operations.out_decided_at IS DISTINCT FROM EXCLUDED.out_decided_at)`,
		[]any{x.OperationID, x.Login, x.Tag, x.Attempt, x.Status, nullInt(x.Code), nullInt(x.Retcode),
			nullText(x.Msg), x.Unanswered, nullInt64(x.OrderID), nullInt64(x.DealID), nullInt64(x.Position),
			decpOrNull(x.Price), decpOrNull(x.Volume), x.DecidedAt}
}

// nullText is s, NULL when empty.
func nullText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nullInt64(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

func nullInt(n int) any {
	if n == 0 {
		return nil
	}
	return n
}
