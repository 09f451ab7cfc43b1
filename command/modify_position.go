package command

import (
	"context"
	"errors"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/query"
)

// ModifyPosition is PUT /v1/position: change a position's SL/TP in place (0 removes one;
// a stop not sent keeps its value).
type ModifyPosition struct {
	Caller       Caller
	Login        int64
	TradeAllowed bool
	Params       Params
}

// ModifyPositionHandler validates, records and queues SL/TP changes.
type ModifyPositionHandler struct {
	core      core
	v         *Validator
	positions PositionReader
}

// NewModifyPositionHandler builds the handler.
func NewModifyPositionHandler(s Shared, v *Validator, positions PositionReader) (ModifyPositionHandler, error) {
	c, err := newCore(s)
	if err != nil {
		return ModifyPositionHandler{}, err
	}
	if v == nil || positions == nil {
		return ModifyPositionHandler{}, errors.New("command: modify position needs a validator and the positions read model")
	}
	return ModifyPositionHandler{core: c, v: v, positions: positions}, nil
}

// Handle validates the new stops (-4001, -4008, -4016, -4009) and queues the change.
func (h ModifyPositionHandler) Handle(ctx context.Context, cmd ModifyPosition) (Result, error) {
	return h.core.handle(ctx, h.v.symbols, cmd.Caller, cmd.Login, cmd.Params, query.KindModifyPosition, false,
		func(coid string) (prepared, error) {
			ev, digits, err := h.validate(ctx, cmd, coid)
			return prepared{ev: ev, digits: digits}, err
		})
}

func (h ModifyPositionHandler) validate(ctx context.Context, cmd ModifyPosition, coid string) (*events.PositionModifyRequested, int32, error) {
	p := cmd.Params
	_, slSent := optional(p, "sl")
	_, tpSent := optional(p, "tp")
	sl, tp, err := stops(p)
	if err != nil {
		return nil, 0, err
	}
	if !slSent && !tpSent {
		return nil, 0, events.Reject(events.CodeMandatoryParam, "Mandatory parameter 'sl' or 'tp' was not sent, was empty/null, or malformed.")
	}
	pos, err := openPosition(ctx, h.positions, p, cmd.Login)
	if err != nil {
		return nil, 0, err
	}
	spec, err := h.v.symbol(ctx, pos.Symbol)
	if err != nil {
		return nil, 0, err
	}
	if err := stopModesAllow(spec, sl, tp); err != nil {
		return nil, 0, err
	}
	for _, pr := range []*apd.Decimal{sl, tp} {
		if err := tickRule(spec, pr); err != nil {
			return nil, 0, err
		}
	}
	if !slSent {
		sl = nonZero(pos.SL)
	}
	if !tpSent {
		tp = nonZero(pos.TP)
	}
	buy := pos.Direction == 0
	if q, fresh := h.v.freshQuote(pos.Symbol, h.core.now()); fresh {
		ref := q.Ask // stops are measured from the closing side: bid for a buy, ask for a sell
		if buy {
			ref = q.Bid
		}
		// Only the stops this request sets are checked; one it keeps was accepted before.
		var checkSL, checkTP *apd.Decimal
		if slSent {
			checkSL = sl
		}
		if tpSent {
			checkTP = tp
		}
		if err := stopsDistance(spec, buy, ref, checkSL, checkTP); err != nil {
			return nil, 0, err
		}
	}
	if err := tradeModeAllows(spec, buy, false); err != nil {
		return nil, 0, err
	}
	if !cmd.TradeAllowed {
		return nil, 0, errAccountTradeOff
	}
	head, err := h.core.header(ctx, cmd.Caller, cmd.Login, coid)
	if err != nil {
		return nil, 0, err
	}
	return &events.PositionModifyRequested{Operation: head,
		PositionID: pos.PositionID, Symbol: pos.Symbol, Side: positionSide(pos), SL: sl, TP: tp}, spec.Digits, nil
}

// nonZero is d, or nil when d is zero (no stop).
func nonZero(d apd.Decimal) *apd.Decimal {
	if d.IsZero() {
		return nil
	}
	return &d
}
