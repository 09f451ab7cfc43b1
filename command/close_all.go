package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/query"
)

// CloseAll is DELETE /v1/allOpenPositions: close every open position of Login. It always
// behaves like ACK.
type CloseAll struct {
	Caller       Caller
	Login        int64
	TradeAllowed bool
	Params       Params
}

// SweepLeg is one position of a sweep's snapshot and its close operation as known now.
type SweepLeg struct {
	PositionID int64
	Op         query.Operation
	Digits     int32
}

// SweepResult is a sweep's answer: its snapshot, leg by leg.
type SweepResult struct {
	Login         int64
	ClientOrderID string
	Legs          []SweepLeg
}

// CloseAllHandler records and queues sweeps.
type CloseAllHandler struct {
	core      core
	v         *Validator
	positions PositionReader
}

// NewCloseAllHandler builds the handler.
func NewCloseAllHandler(s Shared, v *Validator, positions PositionReader) (CloseAllHandler, error) {
	c, err := newCore(s)
	if err != nil {
		return CloseAllHandler{}, err
	}
	if v == nil || positions == nil {
		return CloseAllHandler{}, errors.New("command: close all needs a validator and the positions read model")
	}
	return CloseAllHandler{core: c, v: v, positions: positions}, nil
}

// Handle snapshots the open positions and queues one close per position, all in one append
// with the sweep itself. Reusing the client order id replays the original snapshot (closing
// nothing opened since) and finishes an interrupted sweep: legs the read model has not seen
// are appended again, and the trade server answers a leg whose position has closed meanwhile
// with 10036 (-5006).
func (h CloseAllHandler) Handle(ctx context.Context, cmd CloseAll) (SweepResult, error) {
	coid, given, err := clientOrderID(cmd.Params, "newClientOrderId")
	if err != nil {
		return SweepResult{}, err
	}
	if rec, ok, err := h.core.lookup(ctx, cmd.Caller, coid, given); err != nil {
		return SweepResult{}, err
	} else if ok {
		return h.replay(ctx, rec, cmd.Login)
	}
	if !cmd.TradeAllowed {
		return SweepResult{}, errAccountTradeOff
	}
	open, err := h.positions.OpenPositions(ctx, cmd.Login, "")
	if err != nil {
		return SweepResult{}, fmt.Errorf("read open positions of %d: %w", cmd.Login, err)
	}
	head, err := h.core.header(ctx, cmd.Caller, cmd.Login, coid)
	if err != nil {
		return SweepResult{}, err
	}
	sweep := &events.SweepRequested{Operation: head, Legs: []events.SweepLeg{}}
	evs := []events.Event{sweep}
	for _, pos := range open {
		legHead, err := h.core.header(ctx, cmd.Caller, cmd.Login, coid)
		if err != nil {
			return SweepResult{}, err
		}
		leg := &events.PositionCloseRequested{Operation: legHead,
			PositionID: pos.PositionID, Symbol: pos.Symbol, Side: closingSide(pos), SweepID: sweep.OperationID}
		vol := pos.Volume
		sweep.Legs = append(sweep.Legs, events.SweepLeg{PositionID: pos.PositionID, OperationID: leg.OperationID,
			ClientOrderID: coid, Tag: leg.Tag, Volume: &vol})
		evs = append(evs, leg)
	}
	rec, created, err := h.core.submit(ctx, newOperation{caller: cmd.Caller, coid: coid, kind: query.KindCloseAll,
		login: cmd.Login, id: sweep.OperationID, tag: sweep.Tag, evs: evs})
	if err != nil {
		return SweepResult{}, err
	}
	if !created {
		return h.replay(ctx, rec, cmd.Login)
	}
	res := SweepResult{Login: cmd.Login, ClientOrderID: coid}
	for i, leg := range evs[1:] {
		op := operationOf(leg)
		op.Volume = sweep.Legs[i].Volume
		res.Legs = append(res.Legs, SweepLeg{PositionID: open[i].PositionID, Op: op, Digits: h.digits(ctx, op.Symbol)})
	}
	return res, nil
}

// replay answers a reused sweep id from its record.
func (h CloseAllHandler) replay(ctx context.Context, rec Record, login int64) (SweepResult, error) {
	if rec.Kind != query.KindCloseAll || rec.Login != login {
		return SweepResult{}, errReused
	}
	if len(rec.Envelopes) == 0 {
		return SweepResult{}, fmt.Errorf("idempotency record %q holds no sweep", rec.ClientOrderID)
	}
	head, err := events.Decode(rec.Envelopes[0])
	if err != nil {
		return SweepResult{}, fmt.Errorf("decode stored sweep %s: %w", rec.ClientOrderID, err)
	}
	snapshot, ok := head.(*events.SweepRequested)
	if !ok {
		return SweepResult{}, fmt.Errorf("idempotency record %q holds %s, not a sweep", rec.ClientOrderID, head.EventType())
	}
	volumes := make(map[int64]*apd.Decimal, len(snapshot.Legs))
	for _, l := range snapshot.Legs {
		volumes[l.PositionID] = l.Volume
	}
	legs := make([]events.Event, 0, len(rec.Envelopes)-1)
	for _, env := range rec.Envelopes[1:] {
		ev, err := events.Decode(env)
		if err != nil {
			return SweepResult{}, fmt.Errorf("decode stored sweep leg of %s: %w", rec.ClientOrderID, err)
		}
		legs = append(legs, ev)
	}
	known, err := h.core.ops.SweepLegs(ctx, rec.OperationID)
	if err != nil {
		return SweepResult{}, fmt.Errorf("read sweep %s: %w", rec.OperationID, err)
	}
	byID := make(map[string]query.Operation, len(known))
	for _, op := range known {
		byID[op.OperationID] = op
	}
	res := SweepResult{Login: login, ClientOrderID: rec.ClientOrderID}
	missing := false
	for _, leg := range legs {
		op, ok := byID[leg.(*events.PositionCloseRequested).OperationID]
		if !ok {
			missing = true
			op = operationOf(leg)
		}
		positionID := leg.(*events.PositionCloseRequested).PositionID
		if op.Volume == nil {
			op.Volume = volumes[positionID] // a full close names no volume: the snapshot's
		}
		res.Legs = append(res.Legs, SweepLeg{PositionID: positionID, Op: op, Digits: h.digits(ctx, op.Symbol)})
	}
	if missing {
		envs, err := h.core.rewrap(rec, rec.Attempt)
		if err != nil {
			return SweepResult{}, err
		}
		if err := h.core.log.AppendEnvelopes(ctx, events.TopicCommands(), envs...); err != nil {
			return SweepResult{}, errQueue
		}
	}
	return res, nil
}

func (h CloseAllHandler) digits(ctx context.Context, symbol string) int32 {
	if spec, ok, err := h.v.symbols.Symbol(ctx, symbol); err == nil && ok {
		return spec.Digits
	}
	return 0
}
