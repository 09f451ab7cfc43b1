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

// Candles implements query.BarReader: ClickHouse folds the 1-minute bars into buckets of
// intervalMs. FINAL first collapses each bar's rewrites to its newest state.
func (r *BarsReader) Candles(ctx context.Context, symbol string, intervalMs, fromMs, toMs int64, limit int) ([]query.Bar, error) {
	if intervalMs <= 0 || intervalMs%60000 != 0 {
		return nil, fmt.Errorf("candles of %s: interval %d ms is not a whole number of minutes", symbol, intervalMs)
	}
	rows, err := r.conn.Query(ctx, `SELECT intDiv(open_time, ?) * ? AS bucket,
		toString(argMin(open, open_time)), toString(max(high)), toString(min(low)), toString(argMax(close, open_time)), sum(ticks)
		FROM bars_1m FINAL
		WHERE symbol = ? AND open_time >= ? AND open_time < ?
		GROUP BY bucket ORDER BY bucket LIMIT ?`,
		intervalMs, intervalMs, symbol, fromMs, toMs+intervalMs, uint64(max(limit, 0)))
	if err != nil {
		return nil, fmt.Errorf("read candles of %s: %w", symbol, err)
	}
	defer rows.Close()
	out := []query.Bar{}
	for rows.Next() {
		var b query.Bar
		var o, h, l, c string
		var n uint64
		if err := rows.Scan(&b.OpenTime, &o, &h, &l, &c, &n); err != nil {
			return nil, fmt.Errorf("scan candle of %s: %w", symbol, err)
		}
		b.Count = int64(n)
		if err := parseColumns([]string{o, h, l, c}, &b.Open, &b.High, &b.Low, &b.Close); err != nil {
			return nil, fmt.Errorf("candle of %s: %w", symbol, err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
