package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/query"
)

// Caller is who sends an operation: the API key (its stored id is the idempotency scope)
// and what the gateway saw of the request, for the command log's audit trail.
type Caller struct {
	APIKeyID  int64
	Requester events.Requester
}

// Result is what a command handler answers: the operation as known when it answered.
type Result struct {
	// Op is the operation: from the read model when Known (a retry of an operation the read
	// model has seen), else as the request describes it, in its queued status.
	Op    query.Operation
	Known bool
	// Queued is the status the operation has while nobody answered it (ACCEPTED or NEW).
	Queued string
	// Digits is the symbol's price precision, for rendering.
	Digits int32
	// RespType is the newOrderRespType asked for (RESULT for the endpoints that always wait).
	RespType string
	// OrigClientOrderID is, for a cancel, the client order id of the order it cancels when the
	// caller's key placed it.
	OrigClientOrderID string
}

// errQueue is the answer when the command could not be appended: the spec's -5009; the
// record stays, so a retry with the same id tries again.
var errQueue = events.Reject(events.CodeStatusUnknown,
	"Execution status unknown: the operation could not be queued. Retry with the same newClientOrderId.")

// errAccountTradeOff is -2024.
var errAccountTradeOff = events.Reject(events.CodeAccountTradeOff, "Trading is disabled for the account.")

// errReused is -1133.
var errReused = events.Reject(events.CodeClientOrderIDReused,
	"Client order id already used by a different operation or a different login.")

// core is what every command handler shares: the idempotency records, the log and the
// operations read model.
type core struct {
	records *Records
	tags    TagSource
	log     Appender
	ops     OperationReader
	now     func() time.Time
}

// TagSource hands out correlation tags no other operation has (*Tags).
type TagSource interface {
	Next(ctx context.Context) (string, error)
}

// Shared are what every command handler needs: its idempotency records, the correlation
// tags, the log, the operations read model and a clock.
type Shared struct {
	Records    *Records
	Tags       TagSource
	Log        Appender
	Operations OperationReader
	Now        func() time.Time
}

func newCore(s Shared) (core, error) {
	if s.Records == nil || s.Tags == nil || s.Log == nil || s.Operations == nil || s.Now == nil {
		return core{}, errors.New("command: handlers need idempotency records, tags, an appender, the operations read model and a clock")
	}
	return core{records: s.Records, tags: s.Tags, log: s.Log, ops: s.Operations, now: s.Now}, nil
}

// newOperation is an operation about to be recorded and queued.
type newOperation struct {
	caller   Caller
	coid     string
	kind     string
	login    int64
	id, tag  string
	evs      []events.Event
	response json.RawMessage
}

// header is the Operation header of a new operation's first attempt: a fresh operation id
// and correlation tag.
func (c core) header(ctx context.Context, caller Caller, login int64, coid string) (events.Operation, error) {
	tag, err := c.tags.Next(ctx)
	if err != nil {
		return events.Operation{}, err
	}
	return events.Operation{OperationID: newOperationID(), Login: login, ClientOrderID: coid, Tag: tag, Attempt: 1,
		Requester: caller.Requester}, nil
}

// submit records the operation and appends its events; a client order id already recorded
// is a retry, answered by retry. It returns the record that holds the operation and whether
// this call created it.
func (c core) submit(ctx context.Context, n newOperation) (Record, bool, error) {
	envs, err := c.log.Wrap(n.evs...)
	if err != nil {
		return Record{}, false, err
	}
	rec := Record{APIKeyID: n.caller.APIKeyID, ClientOrderID: n.coid, Kind: n.kind, Login: n.login,
		OperationID: n.id, Tag: n.tag, Attempt: 1, Envelopes: envs, Response: n.response}
	inserted, err := c.records.Insert(ctx, []Record{rec})
	if err != nil {
		return Record{}, false, err
	}
	if !inserted[n.coid] {
		stored, ok, err := c.records.Get(ctx, n.caller.APIKeyID, n.coid)
		if err != nil {
			return Record{}, false, err
		}
		if !ok {
			return Record{}, false, fmt.Errorf("idempotency record %q vanished", n.coid)
		}
		return stored, false, nil
	}
	if err := c.log.AppendEnvelopes(ctx, events.TopicCommands(), envs...); err != nil {
		return rec, true, errQueue
	}
	return rec, true, nil
}

// lookup finds the record of a client order id the client sent, for a request that failed
// before it was recorded: a retry is answered from the record, never with the new error.
func (c core) lookup(ctx context.Context, caller Caller, coid string, given bool) (Record, bool, error) {
	if !given {
		return Record{}, false, nil
	}
	return c.records.Get(ctx, caller.APIKeyID, coid)
}

// retry answers a request whose client order id has a record: -1133 for another kind or
// login; otherwise it finishes what the record started and reports the operation as the read
// model knows it (known false: the read model has not seen it yet).
func (c core) retry(ctx context.Context, rec *Record, kind string, login int64) (query.Operation, bool, error) {
	if rec.Kind != kind || rec.Login != login {
		return query.Operation{}, false, errReused
	}
	op, ok, err := c.ops.Operation(ctx, rec.OperationID)
	if err != nil {
		return op, false, fmt.Errorf("read operation %s: %w", rec.OperationID, err)
	}
	switch {
	case !ok || op.Attempt < rec.Attempt:
		// The append may have failed, or the read model has not caught up: append the
		// attempt again, in fresh envelopes so that its dispatch window counts from now
		// (consumers deduplicate on operation id and attempt).
		envs, err := c.rewrap(*rec, rec.Attempt)
		if err != nil {
			return op, false, err
		}
		if err := c.log.AppendEnvelopes(ctx, events.TopicCommands(), envs...); err != nil {
			return op, false, errQueue
		}
		return op, false, nil
	case op.Status == events.StatusRejected && op.Code == int(events.CodeUnavailable) && op.Retcode == 0:
		// Never dispatched: the spec sends a retry of it as a fresh order, the next attempt.
		envs, err := c.rewrap(*rec, rec.Attempt+1)
		if err != nil {
			return op, false, err
		}
		won, err := c.records.NextAttempt(ctx, *rec, rec.Attempt, envs)
		if err != nil {
			return op, false, err
		}
		if !won { // another retry raised the attempt first: it sends it
			stored, ok, err := c.records.Get(ctx, rec.APIKeyID, rec.ClientOrderID)
			if err != nil || !ok {
				return op, false, err
			}
			*rec = stored
			return op, false, nil
		}
		rec.Attempt, rec.Envelopes = rec.Attempt+1, envs
		if err := c.log.AppendEnvelopes(ctx, events.TopicCommands(), envs...); err != nil {
			return op, false, errQueue
		}
		return op, false, nil
	}
	return op, true, nil
}

// rewrap puts the record's command events in fresh envelopes as the given attempt.
func (c core) rewrap(rec Record, attempt int) ([]events.Envelope, error) {
	evs := make([]events.Event, 0, len(rec.Envelopes))
	for _, env := range rec.Envelopes {
		ev, err := events.Decode(env)
		if err != nil {
			return nil, fmt.Errorf("decode stored command of %s: %w", rec.ClientOrderID, err)
		}
		if h, ok := ev.(interface{ OperationHeader() *events.Operation }); ok {
			h.OperationHeader().Attempt = attempt
		}
		evs = append(evs, ev)
	}
	return c.log.Wrap(evs...)
}

// prepared is a validated command ready to be recorded and queued.
type prepared struct {
	ev     events.Event
	digits int32
	// adjust adds to a fresh answer what the request knew beyond its event (nil: nothing).
	adjust func(*Result)
}

// handle is the flow of every single-operation command: read newClientOrderId (and
// newOrderRespType when the endpoint takes one), prepare the validated command event, then
// record and queue it, or answer a retry from its record. A refusal of prepare is answered
// from the record when the client order id has one.
func (c core) handle(ctx context.Context, symbols SymbolReader, caller Caller, login int64, p Params, kind string,
	takesRespType bool, prepare func(coid string) (prepared, error)) (Result, error) {
	coid, given, err := clientOrderID(p, "newClientOrderId")
	if err != nil {
		return Result{}, err
	}
	rt := RespRESULT
	if takesRespType {
		if rt, err = respType(p); err != nil {
			return c.refused(ctx, symbols, caller, coid, given, kind, login, RespACK, err)
		}
	}
	pr, err := prepare(coid)
	if err != nil {
		return c.refused(ctx, symbols, caller, coid, given, kind, login, rt, err)
	}
	head := pr.ev.(interface{ OperationHeader() *events.Operation }).OperationHeader()
	rec, created, err := c.submit(ctx, newOperation{caller: caller, coid: coid, kind: kind, login: login,
		id: head.OperationID, tag: head.Tag, evs: []events.Event{pr.ev}})
	if err != nil {
		return Result{}, err
	}
	if !created {
		return c.answer(ctx, symbols, rec, kind, login, rt)
	}
	op := operationOf(pr.ev)
	res := Result{Op: op, Queued: op.Status, Digits: pr.digits, RespType: rt}
	if pr.adjust != nil {
		pr.adjust(&res)
	}
	return res, nil
}

// answer builds the Result of a retry: the operation as the read model knows it, or as the
// record's command describes it (queued) when the read model has not seen it yet.
func (c core) answer(ctx context.Context, symbols SymbolReader, rec Record, kind string, login int64, rt string) (Result, error) {
	op, known, err := c.retry(ctx, &rec, kind, login)
	if err != nil {
		return Result{}, err
	}
	if !known {
		if len(rec.Envelopes) == 0 {
			return Result{}, fmt.Errorf("idempotency record %q holds no command", rec.ClientOrderID)
		}
		ev, err := events.Decode(rec.Envelopes[len(rec.Envelopes)-1])
		if err != nil {
			return Result{}, fmt.Errorf("decode stored command of %s: %w", rec.ClientOrderID, err)
		}
		op = operationOf(ev)
	}
	res := Result{Op: op, Known: known, Queued: query.QueuedStatus(op.Kind, op.Type), RespType: rt}
	if op.Symbol != "" {
		spec, ok, err := symbols.Symbol(ctx, op.Symbol)
		if err != nil {
			return Result{}, fmt.Errorf("look up symbol %q: %w", op.Symbol, err)
		}
		if ok {
			res.Digits = spec.Digits
		}
	}
	return res, nil
}

// refused answers a request that failed before it was recorded: from the record when the
// client order id has one (a retry), else with the refusal itself. Errors that are not
// refusals (a read model that cannot be read) are returned as they are.
func (c core) refused(ctx context.Context, symbols SymbolReader, caller Caller, coid string, given bool, kind string,
	login int64, rt string, cause error) (Result, error) {
	var rej *events.Rejection
	if !errors.As(cause, &rej) {
		return Result{}, cause
	}
	rec, ok, err := c.lookup(ctx, caller, coid, given)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{}, cause
	}
	return c.answer(ctx, symbols, rec, kind, login, rt)
}

// operationOf is the operation a command event describes, in the kind's queued status.
func operationOf(ev events.Event) query.Operation {
	var op query.Operation
	set := func(h events.Operation, kind string) {
		op.OperationID, op.Login, op.Tag, op.Kind, op.ClientOrderID, op.Attempt =
			h.OperationID, h.Login, h.Tag, kind, h.ClientOrderID, h.Attempt
	}
	switch e := ev.(type) {
	case *events.OrderRequested:
		set(e.Operation, query.KindPlaceOrder)
		op.Symbol, op.Side, op.Type, op.Volume = e.Symbol, e.Side, e.Type, ptr(e.Volume)
		op.Price, op.StopLimitPrice, op.SL, op.TP = e.Price, e.StopLimitPrice, e.SL, e.TP
		op.TimeInForce, op.Expiration, op.Comment = e.TimeInForce, e.Expiration, e.Comment
	case *events.OrderModifyRequested:
		set(e.Operation, query.KindModifyOrder)
		op.Symbol, op.Side, op.Type, op.TargetOrderID, op.OrderID = e.Symbol, e.Side, e.Type, e.OrderID, e.OrderID
		op.Price, op.StopLimitPrice, op.SL, op.TP = e.Price, e.StopLimitPrice, e.SL, e.TP
		op.TimeInForce, op.Expiration = e.TimeInForce, e.Expiration
	case *events.OrderCancelRequested:
		set(e.Operation, query.KindCancelOrder)
		op.Symbol, op.Side, op.Type, op.TargetOrderID, op.OrderID = e.Symbol, e.Side, e.Type, e.OrderID, e.OrderID
	case *events.PositionCloseRequested:
		set(e.Operation, query.KindClosePosition)
		op.Symbol, op.Side, op.Volume, op.TargetPositionID, op.SweepID = e.Symbol, e.Side, e.Volume, e.PositionID, e.SweepID
		op.Type = TypeMarket
	case *events.PositionModifyRequested:
		set(e.Operation, query.KindModifyPosition)
		op.Symbol, op.Side, op.SL, op.TP, op.TargetPositionID = e.Symbol, e.Side, e.SL, e.TP, e.PositionID
	case *events.SweepRequested:
		set(e.Operation, query.KindCloseAll)
	}
	op.Status = query.QueuedStatus(op.Kind, op.Type)
	return op
}

func ptr(d apd.Decimal) *apd.Decimal { return &d }

// clock is the handlers' time source.
type clock = func() time.Time
