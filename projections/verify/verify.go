// Package verify compares read models row for row: the live trading read models against the
// same tables rebuilt from the log into a scratch database up to the positions the live
// projection stored (`tradesvc replay --verify`). It reads tables generically (every column,
// the key from the primary key), so a column added to a read model is compared without a
// change here; only the columns that record when a row was applied are left out, by name.
package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Table is a read model to compare and the columns of it that say when or how often the
// live projection happened to apply a row rather than what the row is.
type Table struct {
	Name    string
	Applied []string
}

// TradingTables are the read models of projection.trading (not the change feed: a rebuild
// writes none). rm.operations.version counts the states the live projection observed, which
// depends on how its batches fell.
var TradingTables = []Table{
	{Name: "rm.operations", Applied: []string{"version"}},
	{Name: "rm.orders"},
	{Name: "rm.positions"},
	{Name: "rm.deals"},
	{Name: "rm.account_balances"},
}

// Querier reads rows: a pool, a connection or a transaction.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// Rows are one table's rows by key ("col=value[,col=value]"), each a column → JSON value map
// (numbers keep the text Postgres wrote, so 1.10 and 1.1 differ, as clients would see).
type Rows map[string]map[string]json.RawMessage

// Snapshot reads every row of every table through q.
func Snapshot(ctx context.Context, q Querier, tables []Table) (map[string]Rows, error) {
	out := make(map[string]Rows, len(tables))
	for _, t := range tables {
		key, err := primaryKey(ctx, q, t.Name)
		if err != nil {
			return nil, err
		}
		rows, err := q.Query(ctx, `SELECT row_to_json(t)::text FROM `+t.Name+` t`)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", t.Name, err)
		}
		rs := Rows{}
		var text string
		_, err = pgx.ForEachRow(rows, []any{&text}, func() error {
			var cols map[string]json.RawMessage
			if err := json.Unmarshal([]byte(text), &cols); err != nil {
				return err
			}
			parts := make([]string, len(key))
			for i, k := range key {
				parts[i] = k + "=" + strings.Trim(string(cols[k]), `"`)
			}
			rs[strings.Join(parts, ",")] = cols
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", t.Name, err)
		}
		out[t.Name] = rs
	}
	return out, nil
}

// primaryKey lists the columns of table's primary key in key order.
func primaryKey(ctx context.Context, q Querier, table string) ([]string, error) {
	rows, err := q.Query(ctx, `SELECT a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = $1::regclass AND i.indisprimary
		ORDER BY array_position(i.indkey::int2[], a.attnum)`, table)
	if err != nil {
		return nil, fmt.Errorf("primary key of %s: %w", table, err)
	}
	cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("primary key of %s: %w", table, err)
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s has no primary key to compare rows by", table)
	}
	return cols, nil
}

// Difference is one way a rebuilt table differs from the live one.
type Difference struct {
	Table string `json:"table"`
	Key   string `json:"key"`
	// What: "only live" (the rebuild lacks the row), "only replayed" (the live table lacks
	// it), or "column" (Column differs).
	What     string          `json:"what"`
	Column   string          `json:"column,omitempty"`
	Live     json.RawMessage `json:"live,omitempty"`
	Replayed json.RawMessage `json:"replayed,omitempty"`
}

// String is the difference as a line for people.
func (d Difference) String() string {
	switch d.What {
	case "column":
		return fmt.Sprintf("%s %s: %s live %s, replayed %s", d.Table, d.Key, d.Column, d.Live, d.Replayed)
	case "only live":
		return fmt.Sprintf("%s %s: only in the live read model: %s", d.Table, d.Key, d.Live)
	}
	return fmt.Sprintf("%s %s: only in the replayed read model: %s", d.Table, d.Key, d.Replayed)
}

// Compare lists every difference between live and replayed, table by table in the order of
// tables, rows by key, columns by name; the Applied columns are left out.
func Compare(tables []Table, live, replayed map[string]Rows) []Difference {
	var out []Difference
	for _, t := range tables {
		skip := map[string]bool{}
		for _, c := range t.Applied {
			skip[c] = true
		}
		l, r := live[t.Name], replayed[t.Name]
		for _, k := range keysOfBoth(l, r) {
			lr, inLive := l[k]
			rr, inReplay := r[k]
			switch {
			case !inReplay:
				out = append(out, Difference{Table: t.Name, Key: k, What: "only live", Live: rowJSON(lr, skip)})
			case !inLive:
				out = append(out, Difference{Table: t.Name, Key: k, What: "only replayed", Replayed: rowJSON(rr, skip)})
			default:
				out = append(out, columnDiffs(t.Name, k, lr, rr, skip)...)
			}
		}
	}
	return out
}

func columnDiffs(table, key string, l, r map[string]json.RawMessage, skip map[string]bool) []Difference {
	var out []Difference
	for _, c := range keysOfBoth(l, r) {
		if skip[c] || bytes.Equal(l[c], r[c]) {
			continue
		}
		out = append(out, Difference{Table: table, Key: key, What: "column", Column: c, Live: orNull(l[c]), Replayed: orNull(r[c])})
	}
	return out
}

func orNull(v json.RawMessage) json.RawMessage {
	if v == nil {
		return json.RawMessage("null")
	}
	return v
}

// rowJSON is a row without its Applied columns, for a report.
func rowJSON(row map[string]json.RawMessage, skip map[string]bool) json.RawMessage {
	keep := make(map[string]json.RawMessage, len(row))
	for c, v := range row {
		if !skip[c] {
			keep[c] = v
		}
	}
	b, err := json.Marshal(keep)
	if err != nil {
		return json.RawMessage(`"unprintable row"`)
	}
	return b
}

// keysOfBoth returns the keys of either map, sorted, each once.
func keysOfBoth[V any](l, r map[string]V) []string {
	keys := make([]string, 0, len(l)+len(r))
	for k := range l {
		keys = append(keys, k)
	}
	for k := range r {
		if _, ok := l[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}
