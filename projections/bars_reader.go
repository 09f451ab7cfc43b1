package projections

import (
	"context"
	"errors"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tradesvc/query"
)

// BarsReader reads 1-minute bars from ClickHouse for GET /v1/klines.
type BarsReader struct{ conn driver.Conn }

// NewBarsReader builds the reader.
func NewBarsReader(conn driver.Conn) (*BarsReader, error) {
	if conn == nil {
		return nil, errors.New("projections: bars reader needs a ClickHouse connection")
	}
	return &BarsReader{conn: conn}, nil
}

// Bars1m implements query.BarReader. FINAL collapses each bar's rewrites to its newest state.
func (r *BarsReader) Bars1m(ctx context.Context, symbol string, fromMs, toMs int64, limit int) ([]query.Bar, error) {
	rows, err := r.conn.Query(ctx, `SELECT open_time, toString(open), toString(high), toString(low), toString(close), ticks
		FROM bars_1m FINAL WHERE symbol = ? AND open_time >= ? AND open_time <= ?
		ORDER BY open_time LIMIT ?`, symbol, fromMs, toMs, uint64(max(limit, 0)))
	if err != nil {
		return nil, fmt.Errorf("read bars of %s: %w", symbol, err)
	}
	defer rows.Close()
	var out []query.Bar
	for rows.Next() {
		var b query.Bar
		var o, h, l, c string
		var n uint64
		if err := rows.Scan(&b.OpenTime, &o, &h, &l, &c, &n); err != nil {
			return nil, fmt.Errorf("scan bar of %s: %w", symbol, err)
		}
		b.Count = int64(n)
		if err := parseColumns([]string{o, h, l, c}, &b.Open, &b.High, &b.Low, &b.Close); err != nil {
			return nil, fmt.Errorf("bar of %s: %w", symbol, err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
