package executor

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// operation is one command event the executor acts on: the operation it belongs to, what it
// asks the trade server, and what the outcome mapping needs to know about it.
type operation struct {
	op   events.Operation
	kind trading.Kind
	// typ is the order type the command names (MARKET, BUY_LIMIT, ...; empty when none).
	typ string
	// requestedAt is when the command was appended (envelope OccurredAt, Unix ms): the
	// dispatch window runs from it.
	requestedAt int64
	req         mt5.TradeRequest
	// want is the volume a fill must reach to be complete: the order's volume, a partial
	// close's volume; zero for a full close (complete when the position is gone).
	want apd.Decimal
	// invalid, when set, is why the command cannot become a trade request; the operation is
	// refused without sending (a producer bug must still get a final answer).
	invalid error
	// recordedAt, when set, is the time (sent_at) of its "sent" row, written with its
	// account's others of the batch (or by an earlier claim of this executor that never sent
	// it: ownClaims).
	recordedAt time.Time
	// env is the command's envelope, which the outcome carries.
	env events.Envelope
	// ownRecord: the operation's idempotency record is its own, one command under its
	// client order id (a sweep's legs share the sweep's), which the claim checks names it.
	ownRecord bool
	// superseded: its client order id's record names another operation (claim); it is
	// never sent.
	superseded bool
	// void: its client order id's record named another operation when it was first claimed:
	// a retry's command, appended beside the insert that found the id taken (command/submit.go).
	// It is never sent, and its outcome (Void) leaves no trace in the read models.
	void bool
}

type opKey struct {
	id      string
	attempt int
}

func (o *operation) key() opKey { return opKey{o.op.OperationID, o.op.Attempt} }

// market reports whether the operation executes at market when sent (its answer is a fill).
func (o *operation) market() bool { return o.kind.AtMarket(o.typ) }

// removesOrder reports whether the operation takes its target order off the book (a cancel).
func (o *operation) removesOrder() bool {
	return o.kind.Target() == trading.TargetOrder && o.kind.Done(o.typ) == trading.StatusCanceled
}

// queued is the status the operation shows until the trade server says more.
func (o *operation) queued() trading.Status { return o.kind.Queued(o.typ) }

// requests build the trade requests of the command events the executor sends, by event
// type: what the executor handles (Coverage). A sweep is not among them: it is sent as its
// legs, each a PositionCloseRequested of its own.
var requests = map[string]func(ev events.Event, o *operation) error{
	(*events.OrderRequested)(nil).EventType(): func(ev events.Event, o *operation) error {
		c := ev.(*events.OrderRequested)
		o.want = c.Volume
		var err error
		o.req, err = placeRequest(c)
		return err
	},
	(*events.OrderModifyRequested)(nil).EventType(): func(ev events.Event, o *operation) error {
		var err error
		o.req, err = modifyOrderRequest(ev.(*events.OrderModifyRequested))
		return err
	},
	(*events.OrderCancelRequested)(nil).EventType(): func(ev events.Event, o *operation) error {
		o.req = mt5.TradeRequest{Action: mt5.ActionRemove, Order: ev.(*events.OrderCancelRequested).OrderID}
		return nil
	},
	(*events.PositionCloseRequested)(nil).EventType(): func(ev events.Event, o *operation) error {
		c := ev.(*events.PositionCloseRequested)
		o.req = mt5.TradeRequest{Action: mt5.ActionDeal, Position: c.PositionID, Symbol: c.Symbol}
		if c.Volume != nil {
			o.req.Volume, o.want = *c.Volume, *c.Volume
		}
		return nil
	},
	(*events.PositionModifyRequested)(nil).EventType(): func(ev events.Event, o *operation) error {
		c := ev.(*events.PositionModifyRequested)
		o.req = mt5.TradeRequest{Action: mt5.ActionSLTP, Position: c.PositionID, Symbol: c.Symbol,
			SL: value(c.SL), TP: value(c.TP)}
		return nil
	},
}

// newOperation reads a command event. ok is false for events the executor does not send.
func newOperation(env events.Envelope, ev events.Event) (o operation, ok bool) {
	build, ok := requests[ev.EventType()]
	if !ok {
		return o, false
	}
	cmd := ev.(events.Command)
	head, _ := trading.RequestOf(cmd)
	o.op, o.kind, o.typ, o.requestedAt, o.env = *cmd.OperationHeader(), head.Kind, head.Type, env.OccurredAt, env
	o.ownRecord = head.OwnRecord()
	err := build(ev, &o)
	o.req.Login = o.op.Login
	if len([]rune(o.op.Tag)) != trading.TagLen {
		err = errors.Join(err, fmt.Errorf("correlation tag %q is not %d characters", o.op.Tag, trading.TagLen))
	}
	o.req.Comment = trading.WithTag(o.req.Comment, o.op.Tag)
	o.invalid = err
	return o, true
}

// inWindow reports whether o, at now (Unix ms), is still inside a dispatch window of window
// (its command appended at most that long ago).
func (o *operation) inWindow(now int64, window time.Duration) bool {
	return now-o.requestedAt <= window.Milliseconds()
}

func placeRequest(c *events.OrderRequested) (mt5.TradeRequest, error) {
	req := mt5.TradeRequest{Symbol: c.Symbol, Volume: c.Volume, SL: value(c.SL), TP: value(c.TP), Comment: c.Comment}
	side, ok := trading.ParseSide(c.Side)
	t, sendable := trading.ParseSendable(c.Type, side)
	switch {
	case c.Type == trading.TypeMarket && !ok:
		return req, fmt.Errorf("side %q", c.Side)
	case !sendable:
		return req, fmt.Errorf("order type %q", c.Type)
	case t.IsMarket():
		// REQUEST and INSTANT symbols requote from the price the client was shown; the
		// others ignore it. No deviation: the quote is the client's limit.
		req.Action, req.Type, req.Price = mt5.ActionDeal, t, value(c.QuotedPrice)
		return req, nil
	}
	tt, err := timeType(c.TimeInForce)
	req.Action, req.Type, req.TypeTime, req.Expiration = mt5.ActionPending, t, tt, c.Expiration
	req.Price, req.StopLimit = value(c.Price), value(c.StopLimitPrice)
	return req, err
}

func modifyOrderRequest(c *events.OrderModifyRequested) (mt5.TradeRequest, error) {
	// The event carries the order's full new values, so the request is the same whenever it
	// is sent: a resend changes nothing more.
	tt, err := timeType(c.TimeInForce)
	return mt5.TradeRequest{Action: mt5.ActionModify, Order: c.OrderID, Symbol: c.Symbol,
		Price: value(c.Price), StopLimit: value(c.StopLimitPrice), SL: value(c.SL), TP: value(c.TP),
		TypeTime: tt, Expiration: c.Expiration}, err
}

// timeType reads a command's time in force: GTC when none.
func timeType(tif string) (trading.TimeType, error) {
	if tif == "" {
		return trading.TimeGTC, nil
	}
	t, ok := trading.ParseTimeInForce(tif)
	if !ok {
		return trading.TimeGTC, fmt.Errorf("time in force %q", tif)
	}
	return t, nil
}

// value is the decimal or zero (the trade request's "none").
func value(d *apd.Decimal) apd.Decimal {
	if d == nil {
		return apd.Decimal{}
	}
	return *d
}
