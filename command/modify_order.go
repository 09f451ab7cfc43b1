package command

import (
	"context"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// ModifyOrderHandler validates, records and queues pending-order changes.
type ModifyOrderHandler struct {
	core   *core
	v      *Validator
	orders OrderReader
}

var errStopLimitOnly = events.Reject(events.CodeParamNotRequired, "Parameter 'stopLimitPrice' is only for stop-limit orders.")

// Handle validates the new values like a placement's and queues the change.
func (h ModifyOrderHandler) Handle(ctx context.Context, cmd ModifyOrder) (Result, error) {
	return single(ctx, h.core, cmd.Base, trading.KindModifyOrder, func() (*events.OrderModifyRequested, int32, error) {
		return h.validate(ctx, cmd)
	})
}

func (h ModifyOrderHandler) validate(ctx context.Context, cmd ModifyOrder) (*events.OrderModifyRequested, int32, error) {
	o, _, err := h.core.pendingOrder(ctx, h.orders, cmd.Target, cmd.Base)
	if err != nil {
		return nil, 0, err
	}
	buy := o.Type.IsBuy()
	price, stopLimit := o.Price, nonZero(o.StopLimitPrice)
	if cmd.Price != nil {
		price = *cmd.Price
	}
	if cmd.StopLimitPrice.Sent {
		if !o.Type.IsStopLimit() {
			return nil, 0, errStopLimitOnly
		}
		if v := cmd.StopLimitPrice.Value; v == nil || v.Sign() <= 0 {
			return nil, 0, events.Reject(events.CodePriceNegative, "Stop-limit price must be greater than 0.")
		}
		stopLimit = cmd.StopLimitPrice.Value
	}
	sl, tp := kept(cmd.SL, o.SL), kept(cmd.TP, o.TP)
	tif, exp, err := modifiedExpiration(cmd, o, h.core.now().UnixMilli())
	if err != nil {
		return nil, 0, err
	}
	spec, err := h.v.symbol(ctx, o.Symbol)
	if err != nil {
		return nil, 0, err
	}
	if err := tradeModeAllows(spec, buy, false); err != nil {
		return nil, 0, err
	}
	if err := stopModesAllow(spec, sl, tp); err != nil {
		return nil, 0, err
	}
	if !trading.AllowsExpiration(&spec, tif) {
		return nil, 0, events.Reject(events.CodeInvalidExpiration, "Time in force not allowed for the symbol.")
	}
	for _, pr := range []*apd.Decimal{&price, stopLimit, sl, tp} {
		if err := tickRule(spec, pr); err != nil {
			return nil, 0, err
		}
	}
	if q, fresh := h.v.freshQuote(o.Symbol, h.core.now()); fresh {
		if cmd.Price != nil {
			if err := pendingPriceRules(spec, o.Type, price, q); err != nil {
				return nil, 0, err
			}
		}
		open := price
		if stopLimit != nil && o.Type.IsStopLimit() {
			open = *stopLimit
		}
		if err := stopsDistance(spec, buy, open, sl, tp); err != nil {
			return nil, 0, err
		}
	}
	head, err := h.core.headed(ctx, cmd.Base, nil)
	if err != nil {
		return nil, 0, err
	}
	ev := &events.OrderModifyRequested{Operation: head, OrderID: o.OrderID, Symbol: o.Symbol,
		Side: o.Type.Side().String(), Type: o.Type.String(),
		OrderPrices: events.OrderPrices{Price: &price, SL: sl, TP: tp, TimeInForce: tif.String(), Expiration: exp}}
	if o.Type.IsStopLimit() {
		ev.StopLimitPrice = stopLimit
	}
	return ev, spec.Digits, nil
}

// kept is the stop a modification leaves: the one it sets (nil: removed), or the current one.
func kept(s Stop, current apd.Decimal) *apd.Decimal {
	if s.Sent {
		return s.Value
	}
	return nonZero(current)
}

// modifiedExpiration is the time in force and expiration of a modify: unsent keeps the
// order's (the trade server reports every order's time type, so it is always known); GTD and
// GTD_DAY need an expiration (sent, or the order's own when its time type stays), positive
// and, for GTD, in the future (-4012).
func modifiedExpiration(cmd ModifyOrder, o trading.Order, nowMs int64) (trading.TimeType, int64, error) {
	tif := o.TypeTime
	if cmd.TimeInForce != nil {
		tif = *cmd.TimeInForce
	}
	if !tif.NeedsExpiration() {
		return tif, 0, nil
	}
	exp := o.Expiration
	if tif != o.TypeTime {
		exp = 0
	}
	if cmd.Expiration != nil {
		exp = *cmd.Expiration
		if exp <= 0 || (tif == trading.TimeSpecified && exp <= nowMs) {
			return tif, 0, events.Reject(events.CodeInvalidExpiration, "Invalid expiration.")
		}
	}
	if exp == 0 {
		return tif, 0, errMandatory("expiration")
	}
	return tif, exp, nil
}

// errMandatory is -1102 for a parameter a rule needs (expiration, for a GTD modification).
func errMandatory(name string) *events.Rejection {
	return events.Reject(events.CodeMandatoryParam, "Mandatory parameter '"+name+"' was not sent, was empty/null, or malformed.")
}

// nonZero is d, or nil when d is zero (no stop).
func nonZero(d apd.Decimal) *apd.Decimal {
	if d.IsZero() {
		return nil
	}
	return &d
}
