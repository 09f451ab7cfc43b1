package projections

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/apd/v3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events/trading"
	"tradesvc/query"
)

// TradingReader serves the trading read models (rm.operations, rm.orders, rm.positions) to
// the query and command handlers.
type TradingReader struct{ pool *pgxpool.Pool }

// NewTradingReader builds the reader.
func NewTradingReader(pool *pgxpool.Pool) (*TradingReader, error) {
	if pool == nil {
		return nil, errors.New("projections: trading reader needs a pool")
	}
	return &TradingReader{pool: pool}, nil
}

const operationColumns = `operation_id, login, tag, coalesce(kind, ''), coalesce(api_key_id, 0),
	coalesce(client_order_id, ''), attempt, coalesce(requested_at, 0), coalesce(symbol, ''), coalesce(side, ''),
	coalesce(type, ''), volume::text, price::text, stop_limit_price::text, sl::text, tp::text,
	coalesce(time_in_force, ''), coalesce(expiration, 0), coalesce(comment, ''), coalesce(target_order_id, 0),
	coalesce(target_position_id, 0), coalesce(sweep_id, ''), status, coalesce(code, 0), coalesce(retcode, 0),
	coalesce(msg, ''), coalesce(order_id, 0), coalesce(deal_id, 0), coalesce(position_id, 0), exec_price::text,
	executed_volume::text, updated_at, version, deal_count, coalesce(out_attempt >= attempt, false)`

func scanOperation(row pgx.Row) (trading.Operation, error) {
	var o trading.Operation
	var vol, price, stopLimit, sl, tp, execPrice, execVol *string
	if err := row.Scan(&o.OperationID, &o.Login, &o.Tag, &o.Kind, &o.APIKeyID, &o.ClientOrderID, &o.Attempt,
		&o.RequestedAt, &o.Symbol, &o.Side, &o.Type, &vol, &price, &stopLimit, &sl, &tp, &o.TimeInForce,
		&o.Expiration, &o.Comment, &o.TargetOrderID, &o.TargetPositionID, &o.SweepID, &o.Status, &o.Code,
		&o.Retcode, &o.Msg, &o.OrderID, &o.DealID, &o.PositionID, &execPrice, &execVol, &o.UpdatedAt,
		&o.Version, &o.Deals, &o.Decided); err != nil {
		return o, err
	}
	for _, c := range []struct {
		src *string
		dst **apd.Decimal
	}{{vol, &o.Volume}, {price, &o.Price}, {stopLimit, &o.StopLimitPrice}, {sl, &o.SL}, {tp, &o.TP},
		{execPrice, &o.ExecPrice}, {execVol, &o.ExecutedVolume}} {
		d, err := parseOptional(c.src)
		if err != nil {
			return o, fmt.Errorf("operation %s: %w", o.OperationID, err)
		}
		*c.dst = d
	}
	return o, nil
}

func (r *TradingReader) operation(ctx context.Context, where string, args ...any) (trading.Operation, bool, error) {
	o, err := scanOperation(r.pool.QueryRow(ctx, `SELECT `+operationColumns+` FROM rm.operations WHERE `+where, args...))
	if errors.Is(err, pgx.ErrNoRows) {
		return trading.Operation{}, false, nil
	}
	if err != nil {
		return trading.Operation{}, false, fmt.Errorf("read operation: %w", err)
	}
	return o, true, nil
}

// Operation returns the operation with the given id; ok is false when the read model does
// not know it (yet). A row an outcome created before its command has Kind "".
func (r *TradingReader) Operation(ctx context.Context, operationID string) (trading.Operation, bool, error) {
	return r.operation(ctx, `operation_id = $1`, operationID)
}

// OperationByClientID returns the operation the key recorded under clientOrderID.
func (r *TradingReader) OperationByClientID(ctx context.Context, apiKeyID int64, clientOrderID string) (trading.Operation, bool, error) {
	return r.operation(ctx, `api_key_id = $1 AND client_order_id = $2 ORDER BY requested_at DESC LIMIT 1`,
		apiKeyID, clientOrderID)
}

// SweepLegs returns the close operations of a sweep, ordered by target position.
func (r *TradingReader) SweepLegs(ctx context.Context, sweepID string) ([]trading.Operation, error) {
	return readAll(ctx, r.pool, "sweep legs", scanOperation, `SELECT `+operationColumns+` FROM rm.operations
		WHERE sweep_id = $1 ORDER BY target_position_id, operation_id`, sweepID)
}

// Orders are read with the client order id and key of the operation whose tag their comment
// carries (resolved, not stored: the command may be projected after the order).
const orderSelect = `SELECT r.order_id, r.login, r.symbol, r.type, r.state, r.volume_initial::text,
	r.volume_current::text, r.price::text, r.stop_limit_price::text, r.sl::text, r.tp::text, r.type_time,
	r.expiration, r.comment, coalesce(r.tag, ''), coalesce(r.position_id, 0), r.time_setup,
	coalesce(r.time_done, 0), r.update_time, r.open, coalesce(o.client_order_id, ''), coalesce(o.api_key_id, 0),
	coalesce(o.operation_id, '')
	FROM rm.orders r LEFT JOIN rm.operations o ON o.login = r.login AND o.tag = r.tag AND o.kind IS NOT NULL `

func scanOrder(row pgx.Row) (trading.Order, error) {
	var o trading.Order
	var vi, vc, price, stopLimit, sl, tp string
	if err := row.Scan(&o.OrderID, &o.Login, &o.Symbol, &o.Type, &o.State, &vi, &vc, &price, &stopLimit, &sl, &tp,
		&o.TypeTime, &o.Expiration, &o.Comment, &o.Tag, &o.PositionID, &o.TimeSetup, &o.TimeDone, &o.UpdateTime,
		&o.Open, &o.ClientOrderID, &o.APIKeyID, &o.OperationID); err != nil {
		return o, err
	}
	if err := parseColumns([]string{vi, vc, price, stopLimit, sl, tp}, &o.VolumeInitial, &o.VolumeCurrent, &o.Price,
		&o.StopLimitPrice, &o.SL, &o.TP); err != nil {
		return o, fmt.Errorf("order %d: %w", o.OrderID, err)
	}
	return o, nil
}

func (r *TradingReader) orders(ctx context.Context, what, where string, args ...any) ([]trading.Order, error) {
	return readAll(ctx, r.pool, what, scanOrder, orderSelect+where, args...)
}

// Order returns order orderID of login, open or done; ok is false when the login has no such
// order.
func (r *TradingReader) Order(ctx context.Context, login, orderID int64) (trading.Order, bool, error) {
	// By the primary key alone, the login checked here: with the login in the WHERE clause a
	// plan cached while the table was small could take the (login, time_setup) index and
	// read every order of the login.
	o, err := scanOrder(r.pool.QueryRow(ctx, orderSelect+`WHERE r.order_id = $1`, orderID))
	if errors.Is(err, pgx.ErrNoRows) || err == nil && o.Login != login {
		return trading.Order{}, false, nil
	}
	if err != nil {
		return trading.Order{}, false, fmt.Errorf("read order %d: %w", orderID, err)
	}
	return o, true, nil
}

// OpenOrders returns the login's pending orders (of one symbol when symbol is not empty),
// ordered by order id. A market order passing through the book is not a pending order.
func (r *TradingReader) OpenOrders(ctx context.Context, login int64, symbol string) ([]trading.Order, error) {
	return r.orders(ctx, "open orders", `WHERE r.login = $1 AND r.open AND r.type NOT IN (0, 1)
		AND ($2 = '' OR r.symbol = $2) ORDER BY r.order_id`, login, symbol)
}

// Orders returns the login's orders, open and done, of window w: setup time in [From, To],
// oldest first by setup time (then id).
func (r *TradingReader) Orders(ctx context.Context, login int64, w query.OrdersWindow) ([]trading.Order, error) {
	return r.orders(ctx, "orders", `WHERE r.login = $1 AND r.time_setup BETWEEN $2 AND $3
		AND ($4 = '' OR r.symbol = $4) AND r.order_id >= $5
		ORDER BY r.time_setup, r.order_id LIMIT $6`, login, w.From, w.To, w.Symbol, w.FromOrderID, max(w.Limit, 0))
}

const positionSelect = `SELECT position_id, login, symbol, direction, volume::text, price_open::text, sl::text,
	tp::text, profit::text, swap::text, comment, time_open, update_time, open FROM rm.positions `

func scanPosition(row pgx.Row) (trading.Position, error) {
	var p trading.Position
	var vol, open, sl, tp, profit, swap string
	if err := row.Scan(&p.PositionID, &p.Login, &p.Symbol, &p.Direction, &vol, &open, &sl, &tp, &profit, &swap,
		&p.Comment, &p.TimeOpen, &p.UpdateTime, &p.Open); err != nil {
		return p, err
	}
	if err := parseColumns([]string{vol, open, sl, tp, profit, swap}, &p.Volume, &p.PriceOpen, &p.SL, &p.TP,
		&p.Profit, &p.Swap); err != nil {
		return p, fmt.Errorf("position %d: %w", p.PositionID, err)
	}
	return p, nil
}

// Position returns position positionID of login, open or closed; ok is false when the login
// has no such position.
func (r *TradingReader) Position(ctx context.Context, login, positionID int64) (trading.Position, bool, error) {
	p, err := scanPosition(r.pool.QueryRow(ctx, positionSelect+`WHERE position_id = $1 AND login = $2`, positionID, login))
	if errors.Is(err, pgx.ErrNoRows) {
		return trading.Position{}, false, nil
	}
	if err != nil {
		return trading.Position{}, false, fmt.Errorf("read position %d: %w", positionID, err)
	}
	return p, true, nil
}

// OpenPositions returns the login's open positions (of one symbol when symbol is not
// empty), ordered by position id.
func (r *TradingReader) OpenPositions(ctx context.Context, login int64, symbol string) ([]trading.Position, error) {
	return readAll(ctx, r.pool, "open positions", scanPosition, positionSelect+`WHERE login = $1 AND open
		AND ($2 = '' OR symbol = $2) ORDER BY position_id`, login, symbol)
}

// readAll reads every row sql selects with scan; what names the rows in an error.
func readAll[T any](ctx context.Context, pool *pgxpool.Pool, what string, scan func(pgx.Row) (T, error), sql string,
	args ...any) ([]T, error) {
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return out, nil
}
