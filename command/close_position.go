package command

import (
	"context"
	"errors"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/query"
)

// ClosePosition is DELETE /v1/position: close a position fully or partly.
type ClosePosition struct {
	Caller       Caller
	Login        int64
	TradeAllowed bool
	Params       Params
}

// ClosePositionHandler validates, records and queues position closes.
type ClosePositionHandler struct {
	core      core
	v         *Validator
	positions PositionReader
}

// NewClosePositionHandler builds the handler.
func NewClosePositionHandler(s Shared, v *Validator, positions PositionReader) (ClosePositionHandler, error) {
	c, err := newCore(s)
	if err != nil {
		return ClosePositionHandler{}, err
	}
	if v == nil || positions == nil {
		return ClosePositionHandler{}, errors.New("command: close position needs a validator and the positions read model")
	}
	return ClosePositionHandler{core: c, v: v, positions: positions}, nil
}

// Handle validates the close (-2023, -5006, -4003, -4024, -4007) and queues it.
func (h ClosePositionHandler) Handle(ctx context.Context, cmd ClosePosition) (Result, error) {
	return h.core.handle(ctx, h.v.symbols, cmd.Caller, cmd.Login, cmd.Params, query.KindClosePosition, true,
		func(coid string) (prepared, error) {
			ev, held, digits, err := h.validate(ctx, cmd, coid)
			return prepared{ev: ev, digits: digits, adjust: func(r *Result) {
				if r.Op.Volume == nil {
					r.Op.Volume = &held // the response shows what a full close asks to close
				}
			}}, err
		})
}

// validate returns the close event, the position's volume (what a full close closes) and the
// symbol's digits.
func (h ClosePositionHandler) validate(ctx context.Context, cmd ClosePosition, coid string) (*events.PositionCloseRequested, apd.Decimal, int32, error) {
	p := cmd.Params
	vol, err := decimalParam(p, "volume")
	if err != nil {
		return nil, apd.Decimal{}, 0, err
	}
	if vol != nil && vol.Sign() <= 0 {
		return nil, apd.Decimal{}, 0, events.Reject(events.CodeVolumeNotPositive, "Volume must be greater than 0.")
	}
	pos, err := openPosition(ctx, h.positions, p, cmd.Login)
	if err != nil {
		return nil, apd.Decimal{}, 0, err
	}
	spec, err := h.v.symbol(ctx, pos.Symbol)
	if err != nil {
		return nil, apd.Decimal{}, 0, err
	}
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
	if err := tradeModeAllows(spec, pos.Direction == 1, false); err != nil {
		return nil, apd.Decimal{}, 0, err
	}
	if !cmd.TradeAllowed {
		return nil, apd.Decimal{}, 0, errAccountTradeOff
	}
	// A full close carries no volume: the executor closes whatever the position holds.
	head, err := h.core.header(ctx, cmd.Caller, cmd.Login, coid)
	if err != nil {
		return nil, apd.Decimal{}, 0, err
	}
	ev := &events.PositionCloseRequested{Operation: head,
		PositionID: pos.PositionID, Symbol: pos.Symbol, Side: closingSide(pos), Volume: vol}
	return ev, pos.Volume, spec.Digits, nil
}
