package command

import (
	"context"
	"errors"
	"slices"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/query"
)

// ModifyOrder is PUT /v1/order: change a pending order's price, stop-limit price, stops or
// expiration. A parameter not sent keeps the order's current value.
type ModifyOrder struct {
	Caller       Caller
	Login        int64
	TradeAllowed bool
	Params       Params
}

// ModifyOrderHandler validates, records and queues pending-order changes.
type ModifyOrderHandler struct {
	core   core
	v      *Validator
	orders OrderReader
}

// NewModifyOrderHandler builds the handler.
func NewModifyOrderHandler(s Shared, v *Validator, orders OrderReader) (ModifyOrderHandler, error) {
	c, err := newCore(s)
	if err != nil {
		return ModifyOrderHandler{}, err
	}
	if v == nil || orders == nil {
		return ModifyOrderHandler{}, errors.New("command: modify order needs a validator and the orders read model")
	}
	return ModifyOrderHandler{core: c, v: v, orders: orders}, nil
}

// Handle validates the new values like a placement's and queues the change.
func (h ModifyOrderHandler) Handle(ctx context.Context, cmd ModifyOrder) (Result, error) {
	return h.core.handle(ctx, h.v.symbols, cmd.Caller, cmd.Login, cmd.Params, query.KindModifyOrder, false,
		func(coid string) (prepared, error) {
			ev, digits, err := h.validate(ctx, cmd, coid)
			return prepared{ev: ev, digits: digits}, err
		})
}

func (h ModifyOrderHandler) validate(ctx context.Context, cmd ModifyOrder, coid string) (*events.OrderModifyRequested, int32, error) {
	p := cmd.Params
	o, _, err := pendingOrder(ctx, h.core, h.orders, p, cmd.Caller, cmd.Login)
	if err != nil {
		return nil, 0, err
	}
	typ := typeName(o.Type)
	buy := o.Type%2 == 0
	price, stopLimit := o.Price, nonZero(o.StopLimitPrice)
	if v, err := decimalParam(p, "price"); err != nil {
		return nil, 0, err
	} else if v != nil {
		if v.Sign() <= 0 {
			return nil, 0, events.Reject(events.CodePriceNegative, "Price must be greater than 0.")
		}
		price = *v
	}
	if _, sent := p.Get("stopLimitPrice"); sent {
		if !isStopLimit(typ) {
			return nil, 0, events.Reject(events.CodeParamNotRequired, "Parameter 'stopLimitPrice' is only for stop-limit orders.")
		}
		v, err := decimalParam(p, "stopLimitPrice")
		if err != nil {
			return nil, 0, err
		}
		if v == nil || v.Sign() <= 0 {
			return nil, 0, events.Reject(events.CodePriceNegative, "Stop-limit price must be greater than 0.")
		}
		stopLimit = v
	}
	_, slSent := optional(p, "sl")
	_, tpSent := optional(p, "tp")
	sl, tp, err := stops(p)
	if err != nil {
		return nil, 0, err
	}
	if !slSent {
		sl = nonZero(o.SL)
	}
	if !tpSent {
		tp = nonZero(o.TP)
	}
	tif, exp, err := modifiedExpiration(p, o, h.core.now().UnixMilli())
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
	if !slices.Contains(spec.ExpirationModes, query.ExpirationMode(tif)) {
		return nil, 0, events.Reject(events.CodeInvalidExpiration, "Time in force not allowed for the symbol.")
	}
	for _, pr := range []*apd.Decimal{&price, stopLimit, sl, tp} {
		if err := tickRule(spec, pr); err != nil {
			return nil, 0, err
		}
	}
	if q, fresh := h.v.freshQuote(o.Symbol, h.core.now()); fresh {
		if _, sent := optional(p, "price"); sent {
			if err := pendingPriceRules(spec, typ, buy, price, q); err != nil {
				return nil, 0, err
			}
		}
		open := price
		if stopLimit != nil && isStopLimit(typ) {
			open = *stopLimit
		}
		if err := stopsDistance(spec, buy, open, sl, tp); err != nil {
			return nil, 0, err
		}
	}
	if !cmd.TradeAllowed {
		return nil, 0, errAccountTradeOff
	}
	head, err := h.core.header(ctx, cmd.Caller, cmd.Login, coid)
	if err != nil {
		return nil, 0, err
	}
	ev := &events.OrderModifyRequested{Operation: head,
		OrderID: o.OrderID, Symbol: o.Symbol, Side: orderSide(o), Type: typ, Price: &price, SL: sl, TP: tp,
		TimeInForce: tif, Expiration: exp}
	if isStopLimit(typ) {
		ev.StopLimitPrice = stopLimit
	}
	return ev, spec.Digits, nil
}

// modifiedExpiration reads timeInForce and expiration of a modify: unsent keeps the order's
// (the trade server reports every order's time type, so it is always known); GTD and GTD_DAY
// need an expiration (sent, or the order's own when its time type stays), positive and, for
// GTD, in the future (-4012).
func modifiedExpiration(p Params, o query.Order, nowMs int64) (string, int64, error) {
	tif := tifName(o.TypeTime)
	if v, ok := optional(p, "timeInForce"); ok {
		if !slices.Contains(timesInForce, v) {
			return "", 0, events.Reject(events.CodeInvalidTIF, "Invalid timeInForce.")
		}
		tif = v
	}
	if !needsExpiration(tif) {
		return tif, 0, nil
	}
	exp := o.Expiration
	if tif != tifName(o.TypeTime) {
		exp = 0
	}
	if v, err := int64Param(p, "expiration"); err != nil {
		return "", 0, err
	} else if v != nil {
		exp = *v
		if exp <= 0 || (tif == "GTD" && exp <= nowMs) {
			return "", 0, events.Reject(events.CodeInvalidExpiration, "Invalid expiration.")
		}
	}
	if exp == 0 {
		return "", 0, errMandatory("expiration")
	}
	return tif, exp, nil
}
