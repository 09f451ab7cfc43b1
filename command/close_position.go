package command

import (
	"context"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// ClosePositionHandler validates, records and queues position closes.
type ClosePositionHandler struct {
	core      *core
	v         *Validator
	positions PositionReader
}

// Handle validates the close (-2023, -5006, -4003, -4024, -4007) and queues it.
func (h ClosePositionHandler) Handle(ctx context.Context, cmd ClosePosition) (Result, error) {
	return h.core.one(ctx, cmd.Base, trading.KindClosePosition, func() (prepared, error) {
		ev, held, digits, err := h.validate(ctx, cmd)
		if err != nil {
			return prepared{}, err
		}
		return prepared{base: cmd.Base, kind: trading.KindClosePosition, evs: []events.Command{ev}, digits: digits,
			adjust: func(r *Result) {
				if r.Op.Volume == nil {
					r.Op.Volume = &held // the response shows what a full close asks to close
				}
			}}, nil
	})
}

// validate returns the close event, the position's volume (what a full close closes) and the
// symbol's digits.
func (h ClosePositionHandler) validate(ctx context.Context, cmd ClosePosition) (*events.PositionCloseRequested, apd.Decimal, int32, error) {
	pos, err := openPosition(ctx, h.positions, cmd.Login, cmd.PositionID)
	if err != nil {
		return nil, apd.Decimal{}, 0, err
	}
	spec, err := h.v.symbol(ctx, pos.Symbol)
	if err != nil {
		return nil, apd.Decimal{}, 0, err
	}
	vol := cmd.Volume
	if vol != nil {
		switch c := vol.Cmp(&pos.Volume); {
		case c > 0:
			return nil, apd.Decimal{}, 0, events.Reject(events.CodeCloseVolumeExceeds, "Close volume exceeds the position's volume.")
		case c == 0:
			vol = nil // a full close is never refused for its step
		default:
			if err := volumeRules(spec, *vol, true); err != nil {
				return nil, apd.Decimal{}, 0, err
			}
		}
	}
	if err := tradeModeAllows(spec, pos.Direction == trading.Sell, false); err != nil {
		return nil, apd.Decimal{}, 0, err
	}
	// A full close carries no volume: the executor closes whatever the position holds.
	head, err := h.core.headed(ctx, cmd.Base, nil)
	if err != nil {
		return nil, apd.Decimal{}, 0, err
	}
	ev := &events.PositionCloseRequested{Operation: head, PositionID: pos.PositionID, Symbol: pos.Symbol,
		Side: pos.Direction.Opposite().String(), Volume: vol}
	return ev, pos.Volume, spec.Digits, nil
}
