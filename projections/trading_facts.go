package projections

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
)

// The raw facts of the trading projection: one statement per event, each changing at most
// one row and only forward (seq for trade-server facts, attempt for commands and outcomes),
// so a redelivered or replayed event changes nothing and reports no row affected.

// statements are the statements of the events the projection applies, by event type: what
// it handles (TradingCoverage). Every command event has one (its operation row).
var statements = func() map[string]func(events.Event) (string, []any) {
	m := map[string]func(events.Event) (string, []any){
		(*events.ExecutionOutcome)(nil).EventType(): func(e events.Event) (string, []any) {
			return outcomeStatement(e.(*events.ExecutionOutcome))
		},
		(*events.DealAdded)(nil).EventType():       dealStatement,
		(*events.OrderChanged)(nil).EventType():    orderStatement,
		(*events.PositionChanged)(nil).EventType(): positionStatement,
		(*events.AccountChanged)(nil).EventType():  accountStatement,
	}
	for _, k := range trading.Kinds() {
		m[k.Command()] = requestStatement
	}
	return m
}()

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

func dealStatement(e events.Event) (string, []any) {
	x := e.(*events.DealAdded)
	return `INSERT INTO rm.deals (deal_id, login, order_id, position_id, symbol, action, entry, reason, volume,
		price, profit, commission, swap, comment, tag, time, seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::numeric, $10::numeric, $11::numeric, $12::numeric,
		$13::numeric, $14, $15, $16, $17)
		ON CONFLICT (deal_id) DO NOTHING`,
		[]any{x.DealID, x.Login, x.OrderID, x.PositionID, x.Symbol, x.Action, x.Entry, x.Reason,
			dec.String(x.Volume), dec.String(x.Price), dec.String(x.Profit), dec.String(x.Commission),
			dec.String(x.Swap), x.Comment, nullText(trading.TagOf(x.Comment)), x.Time, int64(x.Seq)}
}

func orderStatement(e events.Event) (string, []any) {
	x := e.(*events.OrderChanged)
	return `INSERT INTO rm.orders (order_id, login, symbol, type, state, volume_initial, volume_current, price,
		stop_limit_price, sl, tp, type_time, expiration, comment, tag, position_id, time_setup, time_done,
		update_time, open, seq)
		VALUES ($1, $2, $3, $4, $5, $6::numeric, $7::numeric, $8::numeric, $9::numeric, $10::numeric,
		$11::numeric, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21)
		ON CONFLICT (order_id) DO UPDATE SET login = EXCLUDED.login, symbol = EXCLUDED.symbol,
		type = EXCLUDED.type, state = EXCLUDED.state, volume_initial = EXCLUDED.volume_initial,
		volume_current = EXCLUDED.volume_current, price = EXCLUDED.price,
		stop_limit_price = EXCLUDED.stop_limit_price, sl = EXCLUDED.sl, tp = EXCLUDED.tp,
		type_time = EXCLUDED.type_time, expiration = EXCLUDED.expiration, comment = EXCLUDED.comment,
		tag = EXCLUDED.tag, position_id = EXCLUDED.position_id, time_setup = EXCLUDED.time_setup,
		time_done = EXCLUDED.time_done, update_time = EXCLUDED.update_time, open = EXCLUDED.open,
		seq = EXCLUDED.seq
		WHERE rm.orders.seq < EXCLUDED.seq`,
		[]any{x.OrderID, x.Login, x.Symbol, x.Type, x.State, dec.String(x.VolumeInitial),
			dec.String(x.VolumeCurrent), dec.String(x.Price), dec.String(x.StopLimitPrice), dec.String(x.SL),
			dec.String(x.TP), x.TypeTime, x.Expiration, x.Comment, nullText(trading.TagOf(x.Comment)),
			nullInt64(x.PositionID), x.TimeSetup, nullInt64(x.TimeDone), x.Time, x.Change != events.ChangeDelete,
			int64(x.Seq)}
}

func positionStatement(e events.Event) (string, []any) {
	x := e.(*events.PositionChanged)
	return `INSERT INTO rm.positions (position_id, login, symbol, direction, volume, price_open, sl, tp, profit,
		swap, comment, tag, time_open, update_time, open, seq)
		VALUES ($1, $2, $3, $4, $5::numeric, $6::numeric, $7::numeric, $8::numeric, $9::numeric,
		$10::numeric, $11, $12, $13, $14, $15, $16)
		ON CONFLICT (position_id) DO UPDATE SET login = EXCLUDED.login, symbol = EXCLUDED.symbol,
		direction = EXCLUDED.direction, volume = EXCLUDED.volume, price_open = EXCLUDED.price_open,
		sl = EXCLUDED.sl, tp = EXCLUDED.tp, profit = EXCLUDED.profit, swap = EXCLUDED.swap,
		comment = EXCLUDED.comment, tag = EXCLUDED.tag, time_open = EXCLUDED.time_open,
		update_time = EXCLUDED.update_time, open = EXCLUDED.open, seq = EXCLUDED.seq
		WHERE rm.positions.seq < EXCLUDED.seq`,
		[]any{x.PositionID, x.Login, x.Symbol, x.Direction, dec.String(x.Volume), dec.String(x.PriceOpen),
			dec.String(x.SL), dec.String(x.TP), dec.String(x.Profit), dec.String(x.Swap), x.Comment,
			nullText(trading.TagOf(x.Comment)), x.TimeOpen, x.Time, x.Change != events.ChangeClose, int64(x.Seq)}
}

func accountStatement(e events.Event) (string, []any) {
	x := e.(*events.AccountChanged)
	return `INSERT INTO rm.account_balances (login, balance, credit, update_time, seq)
		VALUES ($1, $2::numeric, $3::numeric, $4, $5)
		ON CONFLICT (login) DO UPDATE SET balance = EXCLUDED.balance, credit = EXCLUDED.credit,
		update_time = EXCLUDED.update_time, seq = EXCLUDED.seq
		WHERE rm.account_balances.seq < EXCLUDED.seq`,
		[]any{x.Login, dec.String(x.Balance), dec.String(x.Credit), x.Time, int64(x.Seq)}
}

// requestStatement inserts the operation a command event starts, or completes a row an
// outcome created first; a command of a newer attempt raises the attempt (which resets the
// older attempt's outcome), a redelivered one changes nothing.
func requestStatement(e events.Event) (string, []any) {
	r, _ := trading.RequestOf(e)
	return `INSERT INTO rm.operations (operation_id, login, tag, kind, api_key_id, client_order_id, attempt,
		requested_at, symbol, side, type, volume, price, stop_limit_price, sl, tp, time_in_force, expiration,
		comment, target_order_id, target_position_id, sweep_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::numeric, $13::numeric, $14::numeric,
		$15::numeric, $16::numeric, $17, $18, $19, $20, $21, $22)
		ON CONFLICT (operation_id) DO UPDATE SET kind = EXCLUDED.kind, api_key_id = EXCLUDED.api_key_id,
		client_order_id = EXCLUDED.client_order_id, attempt = EXCLUDED.attempt,
		requested_at = EXCLUDED.requested_at, symbol = EXCLUDED.symbol, side = EXCLUDED.side,
		type = EXCLUDED.type, volume = EXCLUDED.volume, price = EXCLUDED.price,
		stop_limit_price = EXCLUDED.stop_limit_price, sl = EXCLUDED.sl, tp = EXCLUDED.tp,
		time_in_force = EXCLUDED.time_in_force, expiration = EXCLUDED.expiration, comment = EXCLUDED.comment,
		target_order_id = EXCLUDED.target_order_id, target_position_id = EXCLUDED.target_position_id,
		sweep_id = EXCLUDED.sweep_id
		WHERE rm.operations.kind IS NULL OR rm.operations.attempt < EXCLUDED.attempt`,
		[]any{r.OperationID, r.Login, r.Tag, string(r.Kind), r.APIKeyID, r.ClientOrderID, r.Attempt, r.RequestedAt,
			nullText(r.Symbol), nullText(r.Side), nullText(r.Type), nullDec(r.Volume), nullDec(r.Price),
			nullDec(r.StopLimitPrice), nullDec(r.SL), nullDec(r.TP), nullText(r.TimeInForce), nullInt64(r.Expiration),
			nullText(r.Comment), nullInt64(r.TargetOrderID), nullInt64(r.TargetPositionID), nullText(r.SweepID)}
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
			nullDec(x.Price), nullDec(x.Volume), x.DecidedAt}
}

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
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

func nullDec(d *apd.Decimal) any {
	if d == nil {
		return nil
	}
	return dec.String(*d)
}
