package command

import (
	"context"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// ModifyPositionHandler validates, records and queues SL/TP changes.
type ModifyPositionHandler struct {
	core      *core
	v         *Validator
	positions PositionReader
}

// Handle validates the new stops (-4008, -4016, -4009) and queues the change.
func (h ModifyPositionHandler) Handle(ctx context.Context, cmd ModifyPosition) (Result, error) {
	return single(ctx, h.core, cmd.Base, trading.KindModifyPosition, func() (*events.PositionModifyRequested, int32, error) {
		return h.validate(ctx, cmd)
	})
}

func (h ModifyPositionHandler) validate(ctx context.Context, cmd ModifyPosition) (*events.PositionModifyRequested, int32, error) {
	pos, err := openPosition(ctx, h.positions, cmd.Login, cmd.PositionID)
	if err != nil {
		return nil, 0, err
	}
	spec, err := h.v.symbol(ctx, pos.Symbol)
	if err != nil {
		return nil, 0, err
	}
	if err := stopModesAllow(spec, cmd.SL.Value, cmd.TP.Value); err != nil {
		return nil, 0, err
	}
	for _, pr := range []*apd.Decimal{cmd.SL.Value, cmd.TP.Value} {
		if err := tickRule(spec, pr); err != nil {
			return nil, 0, err
		}
	}
	sl, tp := kept(cmd.SL, pos.SL), kept(cmd.TP, pos.TP)
	buy := pos.Direction == trading.Buy
	if q, fresh := h.v.freshQuote(pos.Symbol, h.core.now()); fresh {
		ref := q.Ask // stops are measured from the closing side: bid for a buy, ask for a sell
		if buy {
			ref = q.Bid
		}
		// Only the stops this request sets are checked; one it keeps was accepted before.
		if err := stopsDistance(spec, buy, ref, cmd.SL.Value, cmd.TP.Value); err != nil {
			return nil, 0, err
		}
	}
	if err := tradeModeAllows(spec, buy, false); err != nil {
		return nil, 0, err
	}
	head, err := h.core.headed(ctx, cmd.Base, nil)
	if err != nil {
		return nil, 0, err
	}
	return &events.PositionModifyRequested{Operation: head, PositionID: pos.PositionID, Symbol: pos.Symbol,
		Side: pos.Direction.String(), SL: sl, TP: tp}, spec.Digits, nil
}
