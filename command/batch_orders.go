package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"tradesvc/events"
	"tradesvc/query"
)

// MaxBatchItems is the most orders one POST /v1/batchOrders carries.
const MaxBatchItems = 100

// BatchOrders is POST /v1/batchOrders: up to 100 orders, each with its own login, in one call.
type BatchOrders struct {
	Caller Caller
	// InScope reports whether the caller's key may trade login.
	InScope func(login int64) bool
	// Params hold batchOrders (a JSON array of order objects whose keys are POST /v1/order's
	// parameter names) and newOrderRespType.
	Params Params
}

// BatchItem is one slot of the answer: the order's Result, or its refusal.
type BatchItem struct {
	Result Result
	Err    error
	// Login and ClientOrderID are the item's where readable (0 / "" otherwise).
	Login         int64
	ClientOrderID string
}

// BatchResult is the answer, one slot per item in order.
type BatchResult struct {
	Items    []BatchItem
	RespType string
}

// AccountReader finds active accounts (the account read model).
type AccountReader interface {
	Account(ctx context.Context, login int64) (query.Account, bool, error)
}

// BatchOrdersHandler validates every item like POST /v1/order, records the new ones in one
// statement and queues them in one append.
type BatchOrdersHandler struct {
	core     core
	v        *Validator
	accounts AccountReader
}

// NewBatchOrdersHandler builds the handler.
func NewBatchOrdersHandler(s Shared, v *Validator, accounts AccountReader) (BatchOrdersHandler, error) {
	c, err := newCore(s)
	if err != nil {
		return BatchOrdersHandler{}, err
	}
	if v == nil || accounts == nil {
		return BatchOrdersHandler{}, errors.New("command: batch orders needs a validator and the accounts read model")
	}
	return BatchOrdersHandler{core: c, v: v, accounts: accounts}, nil
}

var (
	errBatchMalformed = events.Reject(events.CodeInvalidData, "Parameter 'batchOrders' must be a JSON array of order objects.")
	errBatchSize      = events.Reject(events.CodeBatchSize, "Batch must hold 1 to 100 orders.")
	errBatchDuplicate = events.Reject(events.CodeDuplicateInBatch, "Duplicate newClientOrderId in the batch.")
	errOutOfScope     = events.Reject(events.CodeLoginOutOfScope, "Login is out of scope, nonexistent or inactive.")
)

// Handle refuses the whole batch for a malformed envelope (-1130), a size outside 1..100
// (-1131) or a duplicate client order id (-1132); every other refusal goes in its item's slot.
func (h BatchOrdersHandler) Handle(ctx context.Context, cmd BatchOrders) (BatchResult, error) {
	rt, err := respType(cmd.Params)
	if err != nil {
		return BatchResult{}, err
	}
	raw, ok := optional(cmd.Params, "batchOrders")
	if !ok {
		return BatchResult{}, errMandatory("batchOrders")
	}
	items, err := parseBatch(raw)
	if err != nil {
		return BatchResult{}, err
	}
	seen := map[string]bool{}
	for _, it := range items {
		if id, ok := it["newClientOrderId"]; ok && id != "" {
			if seen[id] {
				return BatchResult{}, errBatchDuplicate
			}
			seen[id] = true
		}
	}
	out := BatchResult{Items: make([]BatchItem, len(items)), RespType: rt}
	type pending struct {
		slot  int
		given bool
		o     order
		ev    *events.OrderRequested
		err   error
	}
	var todo []pending
	for i, it := range items {
		slot := &out.Items[i]
		login, acc, err := h.login(ctx, cmd, it)
		slot.Login = login
		coid, given, cerr := clientOrderID(it, "newClientOrderId")
		slot.ClientOrderID = coid
		if cerr != nil {
			slot.ClientOrderID, slot.Err = it["newClientOrderId"], cerr
			continue
		}
		if err != nil {
			slot.Err = err
			continue
		}
		o, verr := h.v.Order(ctx, it, h.core.now())
		if verr == nil && !acc.TradeAllowed {
			verr = errAccountTradeOff
		}
		todo = append(todo, pending{slot: i, given: given, o: o, err: verr})
	}
	// Refused items whose client order id has a record are retries: answered from it.
	var recs []Record
	for i := range todo {
		t := &todo[i]
		if t.err != nil {
			continue
		}
		slot := &out.Items[t.slot]
		head, err := h.core.header(ctx, cmd.Caller, slot.Login, slot.ClientOrderID)
		if err != nil {
			return BatchResult{}, err
		}
		t.ev = orderEvent(head, t.o)
		envs, err := h.core.log.Wrap(t.ev)
		if err != nil {
			return BatchResult{}, err
		}
		recs = append(recs, Record{APIKeyID: cmd.Caller.APIKeyID, ClientOrderID: slot.ClientOrderID, Kind: query.KindPlaceOrder,
			Login: slot.Login, OperationID: t.ev.OperationID, Tag: t.ev.Tag, Attempt: 1, Envelopes: envs})
	}
	inserted, err := h.core.records.Insert(ctx, recs)
	if err != nil {
		return BatchResult{}, err
	}
	var envs []events.Envelope
	for _, r := range recs {
		if inserted[r.ClientOrderID] {
			envs = append(envs, r.Envelopes...)
		}
	}
	appendErr := h.core.log.AppendEnvelopes(ctx, events.TopicCommands(), envs...)
	for _, t := range todo {
		slot := &out.Items[t.slot]
		switch {
		case t.err != nil:
			slot.Result, slot.Err = h.core.refused(ctx, h.v.symbols, cmd.Caller, slot.ClientOrderID, t.given,
				query.KindPlaceOrder, slot.Login, rt, t.err)
		case !inserted[slot.ClientOrderID]:
			rec, ok, err := h.core.records.Get(ctx, cmd.Caller.APIKeyID, slot.ClientOrderID)
			if err == nil && !ok {
				err = fmt.Errorf("idempotency record %q vanished", slot.ClientOrderID)
			}
			if err != nil {
				slot.Err = err
				continue
			}
			slot.Result, slot.Err = h.core.answer(ctx, h.v.symbols, rec, query.KindPlaceOrder, slot.Login, rt)
		case appendErr != nil:
			slot.Err = errQueue
		default:
			op := operationOf(t.ev)
			slot.Result = Result{Op: op, Queued: op.Status, Digits: t.o.spec.Digits, RespType: rt}
		}
	}
	return out, nil
}

// login reads an item's login and checks it: missing -1102, not an int64 -1122, out of the
// key's scope or without an active account -2022.
func (h BatchOrdersHandler) login(ctx context.Context, cmd BatchOrders, it MapParams) (int64, query.Account, error) {
	v, ok := optional(it, "login")
	if !ok {
		return 0, query.Account{}, errMandatory("login")
	}
	login, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, query.Account{}, events.Reject(events.CodeInvalidLogin, "Invalid login.")
	}
	if cmd.InScope == nil || !cmd.InScope(login) {
		return login, query.Account{}, errOutOfScope
	}
	acc, found, err := h.accounts.Account(ctx, login)
	if err != nil {
		return login, acc, fmt.Errorf("read account %d: %w", login, err)
	}
	if !found {
		return login, acc, errOutOfScope
	}
	return login, acc, nil
}

// parseBatch decodes the batchOrders array: each item an object whose values are strings or
// numbers (decimals are sent as strings; integers like login and expiration may be numbers).
func parseBatch(raw string) ([]MapParams, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(raw)))
	dec.UseNumber()
	var items []map[string]any
	if err := dec.Decode(&items); err != nil || dec.More() {
		return nil, errBatchMalformed
	}
	if len(items) == 0 || len(items) > MaxBatchItems {
		return nil, errBatchSize
	}
	out := make([]MapParams, len(items))
	for i, it := range items {
		if it == nil {
			return nil, errBatchMalformed
		}
		m := make(MapParams, len(it))
		for k, v := range it {
			switch x := v.(type) {
			case string:
				m[k] = x
			case json.Number:
				m[k] = x.String()
			default:
				return nil, errBatchMalformed
			}
		}
		out[i] = m
	}
	return out, nil
}
