package projections

import (
	"context"
	"fmt"

	"tradesvc/query"
)

// Candles implements query.BarReader: ClickHouse folds the 1-minute bars into buckets of
// intervalMs. FINAL first collapses each bar's rewrites to its newest state.
func (r *HistoryReader) Candles(ctx context.Context, symbol string, intervalMs, fromMs, toMs int64, limit int) ([]query.Bar, error) {
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

// LatestDayBars implements query.BarHistory: for every symbol that has bars, its bars of the
// UTC day of its newest one, which a gateway that starts needs to resume each kline stream's
// current bar (the largest interval, 1d, spans that day) where GET /v1/klines has it.
func (r *HistoryReader) LatestDayBars(ctx context.Context) ([]query.StoredBars, error) {
	rows, err := r.conn.Query(ctx, `SELECT symbol, max(open_time) FROM bars_1m GROUP BY symbol ORDER BY symbol`)
	if err != nil {
		return nil, fmt.Errorf("read the newest bars: %w", err)
	}
	type newest struct {
		symbol string
		open   int64
	}
	var syms []newest
	for rows.Next() {
		var n newest
		if err := rows.Scan(&n.symbol, &n.open); err != nil {
			rows.Close()
			return nil, fmt.Errorf("scan the newest bars: %w", err)
		}
		syms = append(syms, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the newest bars: %w", err)
	}
	out := make([]query.StoredBars, 0, len(syms))
	for _, n := range syms {
		d, err := r.dayBars(ctx, n.symbol, n.open-n.open%86_400_000)
		if err != nil {
			return nil, err
		}
		if len(d.Bars) > 0 {
			out = append(out, d)
		}
	}
	return out, nil
}

// dayBars reads symbol's bars from dayStart on; FINAL collapses each bar's rewrites.
func (r *HistoryReader) dayBars(ctx context.Context, symbol string, dayStart int64) (query.StoredBars, error) {
	rows, err := r.conn.Query(ctx, `SELECT open_time, toString(open), toString(high), toString(low), toString(close), ticks, ver
		FROM bars_1m FINAL WHERE symbol = ? AND open_time >= ? ORDER BY open_time`, symbol, dayStart)
	if err != nil {
		return query.StoredBars{}, fmt.Errorf("read the bars of %s: %w", symbol, err)
	}
	defer rows.Close()
	d := query.StoredBars{Symbol: symbol}
	for rows.Next() {
		var b query.Bar
		var o, h, l, c string
		var n, ver uint64
		if err := rows.Scan(&b.OpenTime, &o, &h, &l, &c, &n, &ver); err != nil {
			return query.StoredBars{}, fmt.Errorf("scan a bar of %s: %w", symbol, err)
		}
		if err := parseColumns([]string{o, h, l, c}, &b.Open, &b.High, &b.Low, &b.Close); err != nil {
			return query.StoredBars{}, fmt.Errorf("bar of %s: %w", symbol, err)
		}
		b.Count = int64(n)
		d.Bars = append(d.Bars, b)
		d.Seq = ver // oldest first: the last row is the newest bar, whose version is its last tick
	}
	return d, rows.Err()
}
