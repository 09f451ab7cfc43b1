package projections

import (
	"context"
	"fmt"

	"tradesvc/events/trading"
	"tradesvc/query"
)

// UserTrades returns the login's closing trading deals (action buy or sell; entry OUT, INOUT
// or OUT_BY: the spec's "today it returns closing deals only") of window w, ordered by deal
// id. FINAL collapses redelivered deals (the table replaces rows by ticket), which ClickHouse
// 18.16 supports with WHERE, ORDER BY and LIMIT.
func (r *HistoryReader) UserTrades(ctx context.Context, login int64, w query.TradesWindow) ([]trading.Deal, error) {
	where := `time_ms >= ? AND time_ms <= ?`
	args := []any{login, w.Symbol, w.Symbol}
	if w.FromID != nil {
		where = `deal_id >= ?` // fromId overrides the time window entirely
		args = append(args, *w.FromID)
	} else {
		args = append(args, w.From, w.To)
	}
	args = append(args, uint64(max(w.Limit, 0)))
	rows, err := r.conn.Query(ctx, `SELECT deal_id, order_id, position_id, symbol, action, entry, toString(volume),
		toString(price), toString(profit), toString(commission), toString(swap), comment, time_ms
		FROM deals FINAL
		WHERE login = ? AND action IN (0, 1) AND entry IN (1, 2, 3) AND (? = '' OR symbol = ?) AND `+where+`
		ORDER BY deal_id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("read deals of %d: %w", login, err)
	}
	defer rows.Close()
	out := []trading.Deal{}
	for rows.Next() {
		d := trading.Deal{Login: login}
		var action, entry int32
		var vol, price, profit, commission, swap string
		if err := rows.Scan(&d.DealID, &d.OrderID, &d.PositionID, &d.Symbol, &action, &entry, &vol, &price, &profit,
			&commission, &swap, &d.Comment, &d.Time); err != nil {
			return nil, fmt.Errorf("scan deal of %d: %w", login, err)
		}
		d.Action, d.Entry = trading.DealAction(action), trading.DealEntry(entry)
		if err := parseColumns([]string{vol, price, profit, commission, swap}, &d.Volume, &d.Price, &d.Profit,
			&d.Commission, &d.Swap); err != nil {
			return nil, fmt.Errorf("deal %d: %w", d.DealID, err)
		}
		out = append(out, d)
	}
	return out, rows.Err()
}
