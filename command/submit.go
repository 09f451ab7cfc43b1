package command

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/postgres"
)

// errQueue is the answer when the command could not be appended: the spec's -5009; the
// record stays, so a retry with the same id tries again.
var errQueue = events.Reject(events.CodeStatusUnknown,
	"Execution status unknown: the operation could not be queued. Retry with the same newClientOrderId.")

// errUnrecorded is the answer when the command was appended and its idempotency record could
// not be stored (recordBeside): the spec's -5009; the executor stores the record from the
// command before it sends, and a retry with the same id answers from it.
var errUnrecorded = events.Reject(events.CodeStatusUnknown,
	"Execution status unknown: the operation was queued but its record could not be stored. Retry with the same newClientOrderId.")

// recordFailed is the answer to a request whose idempotency records could not be stored: -1000
// when no statement reached Postgres; -5009 when Postgres went away or gave up under it (the
// records may be stored without their command queued: a retry with the same id answers from
// them and queues the command, or is a first attempt); the error itself (-1001) when Postgres
// refused the statement, and when the request's own context ended.
func recordFailed(ctx context.Context, err error) error {
	var pgErr *pgconn.PgError
	switch {
	case ctx.Err() != nil:
		return err
	case postgres.NeverSent(err):
		return events.ErrUnavailable
	case errors.As(err, &pgErr) && !postgres.ServerGone(pgErr.Code):
		return err
	}
	return errQueue
}

// errAccountTradeOff is -2024.
var errAccountTradeOff = events.Reject(events.CodeAccountTradeOff, "Trading is disabled for the account.")

// errReused is -1133.
var errReused = events.Reject(events.CodeClientOrderIDReused,
	"Client order id already used by a different operation or a different login.")

// core is what every command handler shares: the idempotency records, the correlation tags,
// the log, and the read models an answer is made of.
type core struct {
	records *Records
	tags    TagSource
	log     *boundedLog
	ops     OperationReader
	symbols SymbolReader
	now     func() time.Time
	stage   func(string, time.Duration)
	// settled waits for a retried unsettled operation to be settled (nil: no wait).
	settled SettleAwaiter
	asked   settleAsks
	// claims lets a record carry its executor's claim (nil: no executor in this process).
	claims EarlyClaimer
}

// EarlyClaim is the executor's claim of a fresh operation's attempt (its "sent" row in
// cmd.executions), made by the statement that stores the operation's idempotency record
// instead of by the executor once it reads the command: the claim is then off the answer's
// path (command/executor, EarlyClaims).
type EarlyClaim struct {
	// At is the time the "sent" row carries.
	At time.Time
	// Claimed is set by the insert when it stored the row with the record.
	Claimed bool
}

// EarlyClaimer is the executor of this process (command/executor.EarlyClaims), which may let
// a record carry its claim.
type EarlyClaimer interface {
	// ClaimEarly returns the claim the record of a fresh operation of login may carry, or nil
	// when the executor would not take it (it does not hold the login's partition).
	ClaimEarly(login int64, operationID string) *EarlyClaim
	// ClaimedEarly tells how the insert that carried c ended: without error, c.Claimed says
	// whether the row was stored; with one, whether it was is unknown.
	ClaimedEarly(c *EarlyClaim, err error)
}

// TagSource hands out correlation tags no other operation has (*Tags).
type TagSource interface {
	Next(ctx context.Context) (string, error)
}

// header is the Operation header of a new operation's first attempt: a fresh operation id
// and correlation tag.
func (c *core) header(ctx context.Context, b Base) (events.Operation, error) {
	tag, err := c.tags.Next(ctx)
	if err != nil {
		return events.Operation{}, err
	}
	return events.Operation{OperationID: newOperationID(), Login: b.Login, ClientOrderID: b.ClientID.ID, Tag: tag,
		Attempt: 1, Requester: b.Caller.Requester}, nil
}

// headed gives a validated operation its header, once the account may trade (-2024); a
// validation that failed (err) is answered as it is.
func (c *core) headed(ctx context.Context, b Base, err error) (events.Operation, error) {
	if err == nil && !b.TradeAllowed {
		err = errAccountTradeOff
	}
	if err != nil {
		return events.Operation{}, err
	}
	return c.header(ctx, b)
}

// single is the flow of an operation of one command event: validate it (its event and the
// symbol's digits), then record and queue it.
func single[E events.Command](ctx context.Context, c *core, b Base, kind trading.Kind, validate func() (E, int32, error)) (Result, error) {
	return c.one(ctx, b, kind, func() (prepared, error) {
		ev, digits, err := validate()
		if err != nil {
			return prepared{}, err
		}
		return prepared{base: b, kind: kind, evs: []events.Command{ev}, digits: digits}, nil
	})
}

// prepared is a validated operation ready to be recorded and queued.
type prepared struct {
	base Base
	kind trading.Kind
	// evs are its command events: the operation's own first (a sweep's legs follow it).
	evs    []events.Command
	digits int32
	// adjust adds to a fresh answer what the request knew beyond its event (nil: nothing).
	adjust func(*Result)
}

// one is the flow of every single operation: prepare it, then record and queue it; a
// refusal is answered from the record when its client order id has one (a retry).
func (c *core) one(ctx context.Context, b Base, kind trading.Kind, prepare func() (prepared, error)) (Result, error) {
	p, err := prepare()
	if err != nil {
		return c.refused(ctx, b, kind, err)
	}
	out := c.submit(ctx, []prepared{p})
	return out[0].Result, out[0].Err
}

// recordKey is an idempotency record's key.
type recordKey struct {
	apiKeyID int64
	coid     string
}

// submit records the operations in one statement and appends the new ones in one append; a
// client order id already recorded is a retry, answered from its record (and the work its
// record started is finished: see retry).
func (c *core) submit(ctx context.Context, ps []prepared) []Outcome {
	out := make([]Outcome, len(ps))
	if c.log.refusing() {
		// The log failed last: nothing new is recorded; a retry is answered from its record.
		for i, p := range ps {
			out[i].Result, out[i].Err = c.refused(ctx, p.base, p.kind, events.ErrUnavailable)
		}
		return out
	}
	recs, inserted, appendErr, err := c.record(ctx, ps)
	if err != nil {
		return failAll(out, err)
	}
	settleBy := c.now().Add(SettleWait) // the retries of one request share one wait
	for i, p := range ps {
		switch {
		case !inserted[recs[i].key()]:
			rec, err := c.stored(ctx, recs[i])
			if err != nil {
				out[i].Err = err
				continue
			}
			if rec.OperationID == recs[i].OperationID && appendErr == nil {
				// The executor read the command, appended beside this insert, first and stored
				// its record from it (command/executor/executions.go, claim): it is this one.
				out[i].Result = fresh(p)
				continue
			}
			out[i].Result, out[i].Err = c.answer(ctx, rec, p.kind, p.base.Login, settleBy)
		case appendErr != nil:
			out[i].Err = errQueue
		default:
			out[i].Result = fresh(p)
		}
	}
	return out
}

// fresh is the answer of an operation recorded and queued by this request.
func fresh(p prepared) Result {
	op, _ := trading.RequestOf(p.evs[0])
	res := Result{Op: op, Digits: p.digits, Fresh: true}
	if p.adjust != nil {
		p.adjust(&res)
	}
	return res
}

// record stores the idempotency records of ps in one statement and appends the command
// events of those it created in one append. It returns the records, which of them this call
// created, and the append's failure (the records stay: a retry appends again).
func (c *core) record(ctx context.Context, ps []prepared) ([]Record, map[recordKey]bool, error, error) {
	recs := make([]Record, len(ps))
	for i, p := range ps {
		evs := make([]events.Event, len(p.evs))
		for j, e := range p.evs {
			evs[j] = e
		}
		envs, err := c.log.Wrap(evs...)
		if err != nil {
			return nil, nil, nil, err
		}
		head := p.evs[0].OperationHeader()
		recs[i] = Record{APIKeyID: p.base.Caller.APIKeyID, ClientOrderID: p.base.ClientID.ID, Kind: p.kind,
			Login: p.base.Login, OperationID: head.OperationID, Tag: head.Tag, Attempt: 1, Envelopes: envs}
	}
	if beside(recs) && !c.records.Busy() {
		return c.recordBeside(ctx, ps, recs)
	}
	inserted, err := c.records.Insert(ctx, recs)
	if err != nil {
		return nil, nil, nil, recordFailed(ctx, err)
	}
	c.stages(ps, "recorded")
	var queued []events.Envelope
	for _, r := range recs {
		if inserted[r.key()] {
			queued = append(queued, r.Envelopes...)
		}
	}
	var appendErr error
	if len(queued) > 0 {
		appendErr = c.log.AppendEnvelopes(ctx, events.TopicCommands(), queued...)
		c.stages(ps, "queued")
	}
	return recs, inserted, appendErr, nil
}

// beside reports whether recs' commands may be appended beside their records' insert rather
// than after it: when each record holds one command, which the executor can store again
// from that command should its insert fail or come later (its claim checks the record, in
// the same statement, before it sends anything). A sweep's record holds its legs' commands,
// which no one command can restore: it is stored first. The caller appends beside only while
// no insert round is running (Records.Busy): under a load that keeps the rounds back to back,
// a record would wait for the round before its own, its command would reach the executor
// first, and the executor would store records from commands (two more statements per
// operation) and wait for the inserts they meet; so the record goes first there, as the
// rounds make it cheap.
func beside(recs []Record) bool {
	for _, r := range recs {
		if len(r.Envelopes) != 1 {
			return false
		}
	}
	return true
}

// recordBeside stores the records and appends their commands at the same time: the answer
// waits for the slower of the two round trips instead of both. A record that finds its
// client order id taken (a retry) leaves its command in the log as an orphan: the executor
// finds the record naming another operation and appends a void outcome, which no projection
// applies (command/executor/execute.go). When the insert fails and the append went through,
// the operation may execute (the executor stores the record from its command): -5009.
//
// When the executor of this process holds the operation's partition, the record's insert also
// stores the executor's claim (EarlyClaimer): it is made before the append starts, so that the
// executor, reading the command, finds it under way.
func (c *core) recordBeside(ctx context.Context, ps []prepared, recs []Record) ([]Record, map[recordKey]bool, error, error) {
	var envs []events.Envelope
	for i, r := range recs {
		envs = append(envs, r.Envelopes...)
		if c.claims != nil {
			recs[i].Claim = c.claims.ClaimEarly(r.Login, r.OperationID)
		}
	}
	appended := make(chan error, 1)
	go func() {
		err := c.log.AppendEnvelopes(ctx, events.TopicCommands(), envs...)
		c.stages(ps, "queued")
		appended <- err
	}()
	inserted, err := c.records.Insert(ctx, recs)
	for _, r := range recs {
		if r.Claim != nil {
			c.claims.ClaimedEarly(r.Claim, err)
		}
	}
	c.stages(ps, "recorded")
	appendErr := <-appended
	switch {
	case err != nil && appendErr == nil:
		return nil, nil, nil, errUnrecorded
	case err != nil:
		return nil, nil, nil, recordFailed(ctx, err)
	}
	return recs, inserted, appendErr, nil
}

// stages records that the operations of ps reached stage.
func (c *core) stages(ps []prepared, stage string) {
	for _, p := range ps {
		if !p.base.Caller.Received.IsZero() {
			c.stage(stage, time.Since(p.base.Caller.Received))
		}
	}
}

// stored reads the record that holds r's client order id (another request's).
func (c *core) stored(ctx context.Context, r Record) (Record, error) {
	rec, ok, err := c.records.Get(ctx, r.APIKeyID, r.ClientOrderID)
	if err == nil && !ok {
		err = fmt.Errorf("idempotency record %q vanished", r.ClientOrderID)
	}
	return rec, err
}

func failAll(out []Outcome, err error) []Outcome {
	for i := range out {
		out[i].Err = err
	}
	return out
}

// refused answers a request that failed before it was recorded: from the record when the
// client order id has one (a retry), else with the refusal itself. Errors that are not
// refusals (a read model that cannot be read) are returned as they are.
func (c *core) refused(ctx context.Context, b Base, kind trading.Kind, cause error) (Result, error) {
	var rej *events.Rejection
	if !errors.As(cause, &rej) || !b.ClientID.Given {
		return Result{}, cause
	}
	rec, ok, err := c.records.Get(ctx, b.Caller.APIKeyID, b.ClientID.ID)
	if err != nil {
		return Result{}, err
	}
	if !ok {
		return Result{}, cause
	}
	return c.answer(ctx, rec, kind, b.Login, c.now().Add(SettleWait))
}

// answer builds the Result of a retry: the operation as the read model knows it, or as the
// record's command describes it (queued) when the read model has not seen it yet. An
// unsettled operation's settlement is waited for until settleBy.
func (c *core) answer(ctx context.Context, rec Record, kind trading.Kind, login int64, settleBy time.Time) (Result, error) {
	op, known, err := c.retry(ctx, &rec, kind, login, settleBy)
	if err != nil {
		return Result{}, err
	}
	if !known {
		ev, err := rec.command()
		if err != nil {
			return Result{}, err
		}
		op, _ = trading.RequestOf(ev)
	}
	res := Result{Op: op, Known: known}
	if op.Symbol != "" {
		spec, ok, err := c.symbols.Symbol(ctx, op.Symbol)
		if err != nil {
			return Result{}, fmt.Errorf("look up symbol %q: %w", op.Symbol, err)
		}
		if ok {
			res.Digits = spec.Digits
		}
	}
	return res, nil
}

// retry answers a request whose client order id has a record: -1133 for another kind or
// login; otherwise it finishes what the record started and reports the operation as the read
// model knows it (known false: the read model has not seen it yet, or a new attempt was just
// queued). An unsettled operation is settled first (settle.go): a retry is sent again, as
// the next attempt, only once its attempt certainly did not execute.
func (c *core) retry(ctx context.Context, rec *Record, kind trading.Kind, login int64, settleBy time.Time) (trading.Operation, bool, error) {
	if rec.Kind != kind || rec.Login != login {
		return trading.Operation{}, false, errReused
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
	case op.Unsettled():
		if op = c.settle(ctx, rec, op, settleBy); op.RetriedAfresh() {
			return c.afresh(ctx, rec, op)
		}
	case op.RetriedAfresh():
		return c.afresh(ctx, rec, op)
	}
	return op, true, nil
}

// afresh queues the record's operation again as its next attempt: its attempt certainly did
// not execute (never dispatched, never sent, or confirmed not executed), and the spec sends a
// retry of it as a fresh order. The executor still asks the trade server by tag before it
// sends a later attempt, so an earlier one that executed after all is never repeated.
func (c *core) afresh(ctx context.Context, rec *Record, op trading.Operation) (trading.Operation, bool, error) {
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

// rewrap puts the record's command events in fresh envelopes as the given attempt.
func (c *core) rewrap(rec Record, attempt int) ([]events.Envelope, error) {
	cmds, err := rec.commands()
	if err != nil {
		return nil, err
	}
	evs := make([]events.Event, len(cmds))
	for i, cmd := range cmds {
		cmd.OperationHeader().Attempt = attempt
		evs[i] = cmd
	}
	return c.log.Wrap(evs...)
}

// digits is the price precision of symbol (0 when unknown).
func (c *core) digits(ctx context.Context, symbol string) int32 {
	if spec, ok, err := c.symbols.Symbol(ctx, symbol); err == nil && ok {
		return spec.Digits
	}
	return 0
}
