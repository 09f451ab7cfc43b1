package command

import (
	"context"
	"fmt"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// CloseAllHandler records and queues sweeps.
type CloseAllHandler struct {
	core      *core
	positions PositionReader
}

// Handle snapshots the open positions and queues one close per position, all in one append
// with the sweep itself. Reusing the client order id replays the original snapshot (closing
// nothing opened since) and finishes an interrupted sweep: legs the read model has not seen
// are appended again, and the trade server answers a leg whose position has closed meanwhile
// with 10036 (-5006).
func (h CloseAllHandler) Handle(ctx context.Context, cmd CloseAll) (SweepResult, error) {
	if cmd.ClientID.Given {
		if rec, ok, err := h.core.records.Get(ctx, cmd.Caller.APIKeyID, cmd.ClientID.ID); err != nil {
			return SweepResult{}, err
		} else if ok {
			return h.replay(ctx, rec, cmd.Login)
		}
	}
	if !cmd.TradeAllowed {
		return SweepResult{}, errAccountTradeOff
	}
	open, err := h.positions.OpenPositions(ctx, cmd.Login, "")
	if err != nil {
		return SweepResult{}, fmt.Errorf("read open positions of %d: %w", cmd.Login, err)
	}
	head, err := h.core.header(ctx, cmd.Base)
	if err != nil {
		return SweepResult{}, err
	}
	sweep := &events.SweepRequested{Operation: head, Legs: []events.SweepLeg{}}
	evs := []events.Command{sweep}
	for _, pos := range open {
		legHead, err := h.core.header(ctx, cmd.Base)
		if err != nil {
			return SweepResult{}, err
		}
		leg := &events.PositionCloseRequested{Operation: legHead, PositionID: pos.PositionID, Symbol: pos.Symbol,
			Side: pos.Direction.Opposite().String(), SweepID: sweep.OperationID}
		vol := pos.Volume
		sweep.Legs = append(sweep.Legs, events.SweepLeg{PositionID: pos.PositionID, OperationID: leg.OperationID,
			ClientOrderID: cmd.ClientID.ID, Tag: leg.Tag, Volume: &vol})
		evs = append(evs, leg)
	}
	recs, inserted, appendErr, err := h.core.record(ctx, []prepared{{base: cmd.Base, kind: trading.KindCloseAll, evs: evs}})
	switch {
	case err != nil:
		return SweepResult{}, err
	case !inserted[recs[0].key()]:
		// A concurrent identical sweep recorded the id first: answer its snapshot.
		rec, err := h.core.stored(ctx, recs[0])
		if err != nil {
			return SweepResult{}, err
		}
		return h.replay(ctx, rec, cmd.Login)
	case appendErr != nil:
		return SweepResult{}, errQueue
	}
	res := SweepResult{Login: cmd.Login, ClientOrderID: cmd.ClientID.ID}
	for i, leg := range evs[1:] {
		op, _ := trading.RequestOf(leg)
		op.Volume = sweep.Legs[i].Volume
		res.Legs = append(res.Legs, SweepLeg{PositionID: open[i].PositionID, Op: op, Digits: h.core.digits(ctx, op.Symbol)})
	}
	return res, nil
}

// replay answers a reused sweep id from its record.
func (h CloseAllHandler) replay(ctx context.Context, rec Record, login int64) (SweepResult, error) {
	if rec.Kind != trading.KindCloseAll || rec.Login != login {
		return SweepResult{}, errReused
	}
	cmds, err := rec.commands()
	if err != nil {
		return SweepResult{}, err
	}
	if len(cmds) == 0 {
		return SweepResult{}, fmt.Errorf("idempotency record %q holds no sweep", rec.ClientOrderID)
	}
	snapshot, ok := cmds[0].(*events.SweepRequested)
	if !ok {
		return SweepResult{}, fmt.Errorf("idempotency record %q holds %s, not a sweep", rec.ClientOrderID, cmds[0].EventType())
	}
	volumes := make(map[int64]*apd.Decimal, len(snapshot.Legs))
	for _, l := range snapshot.Legs {
		volumes[l.PositionID] = l.Volume
	}
	known, err := h.core.ops.SweepLegs(ctx, rec.OperationID)
	if err != nil {
		return SweepResult{}, fmt.Errorf("read sweep %s: %w", rec.OperationID, err)
	}
	byID := make(map[string]trading.Operation, len(known))
	for _, op := range known {
		byID[op.OperationID] = op
	}
	res := SweepResult{Login: login, ClientOrderID: rec.ClientOrderID}
	missing := false
	for _, cmd := range cmds[1:] {
		leg := cmd.(*events.PositionCloseRequested)
		op, ok := byID[leg.OperationID]
		if !ok {
			missing = true
			op, _ = trading.RequestOf(leg)
		}
		if op.Volume == nil {
			op.Volume = volumes[leg.PositionID] // a full close names no volume: the snapshot's
		}
		res.Legs = append(res.Legs, SweepLeg{PositionID: leg.PositionID, Op: op, Digits: h.core.digits(ctx, op.Symbol)})
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
