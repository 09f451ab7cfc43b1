package executor

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
	"tradesvc/query"
)

// operation is one command event the executor acts on: the operation it belongs to, what it
// asks the trade server, and what the outcome mapping needs to know about it.
type operation struct {
	op   events.Operation
	kind string // query.Kind*
	// requestedAt is when the command was appended (envelope OccurredAt, Unix ms): the
	// dispatch window runs from it.
	requestedAt int64
	req         mt5.TradeRequest
	// market: a PLACE_ORDER of type MARKET (fills, rather than rests).
	market bool
	// want is the volume a fill must reach to be complete: the order's volume, a partial
	// close's volume; zero for a full close (complete when the position is gone).
	want apd.Decimal
	// invalid, when set, is why the command cannot become a trade request; the operation is
	// refused without sending (a producer bug must still get a final answer).
	invalid error
	// sentRecorded: its "sent" row was written with its account's others of the batch.
	sentRecorded bool
}

type opKey struct {
	id      string
	attempt int
}

func (o *operation) key() opKey { return opKey{o.op.OperationID, o.op.Attempt} }

// byTag reports whether the operation's effects carry its tag (new orders and deals), so
// that the trade server can be asked what became of it. Modifications and removals change
// existing orders and positions, whose comments are their own; they are idempotent instead.
func (o *operation) byTag() bool {
	return o.kind == query.KindPlaceOrder || o.kind == query.KindClosePosition
}

// queued is the status the operation shows until the trade server says more (docs/trading.md,
// "Operations").
func (o *operation) queued() string {
	switch o.kind {
	case query.KindPlaceOrder:
		if o.market {
			return events.StatusAccepted
		}
		return events.StatusNew
	case query.KindModifyOrder:
		return events.StatusNew
	}
	return events.StatusAccepted
}

// newOperation reads a command event. ok is false for events that are not sent themselves
// (a sweep is sent as its legs, each a PositionCloseRequested of its own).
func newOperation(env events.Envelope, ev events.Event) (o operation, ok bool) {
	o.requestedAt = env.OccurredAt
	var err error
	switch c := ev.(type) {
	case *events.OrderRequested:
		o.op, o.kind = c.Operation, query.KindPlaceOrder
		o.req, o.market, err = placeRequest(c)
		o.want = c.Volume
	case *events.OrderModifyRequested:
		o.op, o.kind = c.Operation, query.KindModifyOrder
		o.req, err = modifyOrderRequest(c)
	case *events.OrderCancelRequested:
		o.op, o.kind = c.Operation, query.KindCancelOrder
		o.req = mt5.TradeRequest{Action: mt5.ActionRemove, Order: c.OrderID}
	case *events.PositionCloseRequested:
		o.op, o.kind = c.Operation, query.KindClosePosition
		o.req = mt5.TradeRequest{Action: mt5.ActionDeal, Position: c.PositionID, Symbol: c.Symbol}
		if c.Volume != nil {
			o.req.Volume, o.want = *c.Volume, *c.Volume
		}
	case *events.PositionModifyRequested:
		o.op, o.kind = c.Operation, query.KindModifyPosition
		o.req = mt5.TradeRequest{Action: mt5.ActionSLTP, Position: c.PositionID, Symbol: c.Symbol,
			SL: value(c.SL), TP: value(c.TP)}
	default:
		return o, false
	}
	o.req.Login = o.op.Login
	if len([]rune(o.op.Tag)) != tagLen {
		err = errors.Join(err, fmt.Errorf("correlation tag %q is not %d characters", o.op.Tag, tagLen))
	}
	o.req.Comment = withTag(o.req.Comment, o.op.Tag)
	o.invalid = err
	return o, true
}

// tagLen is the length of the correlation tag ("#" and six characters).
const tagLen = 7

// withTag ends the platform comment with the tag, shortening the client's comment (at most
// 24 characters by the contract, so only a producer bug) to keep the tag inside the
// characters the server stores: without it the operation could not be found after a crash.
func withTag(comment, tag string) string {
	r := []rune(comment)
	if room := mt5.MaxCommentLen - len([]rune(tag)); len(r) > room {
		r = r[:max(room, 0)]
	}
	return string(r) + tag
}

func placeRequest(c *events.OrderRequested) (mt5.TradeRequest, bool, error) {
	req := mt5.TradeRequest{Symbol: c.Symbol, Volume: c.Volume, SL: value(c.SL), TP: value(c.TP), Comment: c.Comment}
	if c.Type == "MARKET" {
		req.Action = mt5.ActionDeal
		switch c.Side {
		case "BUY":
			req.Type = trading.OrderBuy
		case "SELL":
			req.Type = trading.OrderSell
		default:
			return req, true, fmt.Errorf("side %q", c.Side)
		}
		// REQUEST and INSTANT symbols requote from the price the client was shown; the
		// others ignore it. No deviation: the quote is the client's limit.
		req.Price = value(c.QuotedPrice)
		return req, true, nil
	}
	req.Action = mt5.ActionPending
	t, ok := pendingTypes[c.Type]
	if !ok {
		return req, false, fmt.Errorf("order type %q", c.Type)
	}
	tt, err := timeType(c.TimeInForce)
	req.Type, req.TypeTime, req.Expiration = t, tt, c.Expiration
	req.Price, req.StopLimit = value(c.Price), value(c.StopLimitPrice)
	return req, false, err
}

func modifyOrderRequest(c *events.OrderModifyRequested) (mt5.TradeRequest, error) {
	// The event carries the order's full new values, so the request is the same whenever it
	// is sent: a resend changes nothing more.
	tt, err := timeType(c.TimeInForce)
	return mt5.TradeRequest{Action: mt5.ActionModify, Order: c.OrderID, Symbol: c.Symbol,
		Price: value(c.Price), StopLimit: value(c.StopLimitPrice), SL: value(c.SL), TP: value(c.TP),
		TypeTime: tt, Expiration: c.Expiration}, err
}

var pendingTypes = map[string]trading.OrderType{
	"BUY_LIMIT": trading.OrderBuyLimit, "SELL_LIMIT": trading.OrderSellLimit,
	"BUY_STOP": trading.OrderBuyStop, "SELL_STOP": trading.OrderSellStop,
	"BUY_STOP_LIMIT": trading.OrderBuyStopLimit, "SELL_STOP_LIMIT": trading.OrderSellStopLimit,
}

func timeType(tif string) (trading.TimeType, error) {
	switch tif {
	case "", "GTC":
		return trading.TimeGTC, nil
	case "DAY":
		return trading.TimeDay, nil
	case "GTD":
		return trading.TimeSpecified, nil
	case "GTD_DAY":
		return trading.TimeSpecifiedDay, nil
	}
	return trading.TimeGTC, fmt.Errorf("time in force %q", tif)
}

// value is the decimal or zero (the trade request's "none").
func value(d *apd.Decimal) apd.Decimal {
	if d == nil {
		return apd.Decimal{}
	}
	return *d
}
