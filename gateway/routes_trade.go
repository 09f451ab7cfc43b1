package gateway

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"tradesvc/command"
	"tradesvc/events"
	"tradesvc/events/trading"
)

// WaitLimit is how long RESULT and the endpoints that always wait wait for an answer.
const WaitLimit = 5 * time.Second

// registerTrade registers the TRADE endpoints on the application's command handlers. Each
// decodes its parameters into a typed command (decode_trade.go), hands it to its handler and
// renders the answer (render_trade.go); a request that cannot be decoded is still answered
// from its client order id's record when it is a retry.
func (s *Server) registerTrade() {
	cmds := &s.app.Commands
	operation(s, fiber.MethodPost, "/v1/order", trading.KindPlaceOrder, askedToWait, decodePlaceOrder, cmds.PlaceOrder.Handle)
	operation(s, fiber.MethodPut, "/v1/order", trading.KindModifyOrder, alwaysWaits, decodeModifyOrder, cmds.ModifyOrder.Handle)
	operation(s, fiber.MethodDelete, "/v1/order", trading.KindCancelOrder, alwaysWaits, decodeCancelOrder, cmds.CancelOrder.Handle)
	operation(s, fiber.MethodPut, "/v1/position", trading.KindModifyPosition, alwaysWaits, decodeModifyPosition,
		cmds.ModifyPosition.Handle)
	operation(s, fiber.MethodDelete, "/v1/position", trading.KindClosePosition, askedToWait, decodeClosePosition,
		cmds.ClosePosition.Handle)
	closeAll := TradeEndpoint(fiber.MethodDelete, "/v1/allOpenPositions", trading.KindCloseAll, 1)
	closeAll.Weight = fixed(5)
	s.Handle(closeAll, func(c *fiber.Ctx, r *Request) error {
		b, err := s.base(c, r)
		if err != nil {
			return err
		}
		res, err := cmds.CloseAll.Handle(c.UserContext(), command.CloseAll{Base: b})
		if err != nil {
			return err
		}
		for _, leg := range res.Legs {
			if !leg.Op.Answered() {
				s.admission.Queued(leg.Op.OperationID)
			}
		}
		return c.JSON(RenderSweep(res, s.clock().UnixMilli()))
	})
	// A batch's items are admitted one by one; its ORDERS count is charged in placeBatch,
	// for the items admitted.
	s.Handle(Endpoint{Method: fiber.MethodPost, Path: "/v1/batchOrders", Security: SecTrade, Weight: batchWeight},
		func(c *fiber.Ctx, r *Request) error {
			rt, err := respType(r.Params)
			if err != nil {
				return err
			}
			items, err := decodeBatch(r.Params)
			if err != nil {
				return err
			}
			slots, err := s.placeBatch(c, r, items)
			if err != nil {
				return err
			}
			return c.JSON(s.answerBatch(c.UserContext(), slots, rt == respRESULT))
		})
}

// Whether an operation's endpoint waits for its answer.
const (
	alwaysWaits = true  // modifications and cancels: their answer is the operation's outcome
	askedToWait = false // placements and closes: when newOrderRespType is RESULT
)

// operation registers the TRADE endpoint of one operation kind: read the base, decode the
// command C (a request that cannot be decoded is answered from its client order id's record
// when it is a retry), hand it to its handler and reply, after waiting for the answer when
// the endpoint always waits or the client asked for RESULT (an unreadable newOrderRespType is
// refused without waiting).
func operation[C any](s *Server, method, path string, kind trading.Kind, waits bool,
	decode func(command.Base, *Request) (C, error), handle func(context.Context, C) (command.Result, error)) {
	s.Handle(TradeEndpoint(method, path, kind, 1), func(c *fiber.Ctx, r *Request) error {
		b, err := s.base(c, r)
		if err != nil {
			return err
		}
		wait := waits
		if !waits {
			rt, err := respType(r.Params)
			if err != nil {
				return s.refused(c, b, kind, err, false)
			}
			wait = rt == respRESULT
		}
		cmd, err := decode(b, r)
		if err != nil {
			return s.refused(c, b, kind, err, wait)
		}
		res, err := handle(c.UserContext(), cmd)
		return s.reply(c, res, err, wait)
	})
}

// base reads what every operation carries: the caller, the checked login and account, and
// newClientOrderId (-1118, -1119).
func (s *Server) base(c *fiber.Ctx, r *Request) (command.Base, error) {
	id, err := clientID(r.Params)
	return command.Base{Caller: s.caller(c, r), Login: r.Login, ClientID: id, TradeAllowed: r.Account.TradeAllowed}, err
}

// refused answers a request that could not be decoded: from its record when it is a retry,
// else with the refusal.
func (s *Server) refused(c *fiber.Ctx, b command.Base, kind trading.Kind, cause error, wait bool) error {
	res, err := s.app.Commands.Refused(c.UserContext(), b, kind, cause)
	return s.reply(c, res, err, wait)
}

// reply writes an operation's response, after waiting (up to WaitLimit) for it to be answered
// when wait is set and it is not yet.
func (s *Server) reply(c *fiber.Ctx, res command.Result, err error, wait bool) error {
	if err != nil {
		return err
	}
	if res.Fresh {
		s.admission.Queued(res.Op.OperationID)
		releaseAdmission(c) // counted in flight from now on
	}
	if wait {
		res = s.await(c.UserContext(), res)
		if s.cfg.OnStage != nil && res.Op.Answered() {
			s.cfg.OnStage("answered", time.Since(time.UnixMilli(res.Op.RequestedAt)))
		}
	}
	body, rej := Render(res, s.clock().UnixMilli())
	if rej != nil {
		return rej
	}
	return c.JSON(&body)
}

// batchSlot is one item of a batch: its answer or its refusal, with its login and client
// order id where readable.
type batchSlot struct {
	command.Outcome
	login int64
	coid  string
}

// placeBatch decodes and checks every item like POST /v1/order (its login in the key's scope
// and an active account: -2022; newClientOrderId; admission, -1008; the order), charges
// ORDERS for every item not shed (over the limit: the whole batch is refused, -1015) and
// places the valid ones together; a refusal goes in its item's slot.
func (s *Server) placeBatch(c *fiber.Ctx, r *Request, items []itemParams) ([]batchSlot, error) {
	ctx := c.UserContext()
	caller := s.caller(c, r)
	slots := make([]batchSlot, len(items))
	var cmds []command.PlaceOrder
	var at []int
	shed := 0 // items shed count nothing against ORDERS; every other item counts one
	admitting := 0
	defer func() { s.admission.Release(admitting) }() // the items admitted, once placed
	for i, it := range items {
		slot := &slots[i]
		login, acc, aerr := s.itemAccount(ctx, r, it)
		id, cerr := clientID(it)
		slot.login, slot.coid = login, id.ID
		switch {
		case cerr != nil:
			slot.Err = cerr
			continue
		case aerr != nil:
			slot.Err = aerr
			continue
		}
		admitted, err := s.admit(ctx, r, it, trading.KindPlaceOrder)
		if err != nil {
			slot.Err = err
			shed++
			continue
		}
		if admitted {
			admitting++
		}
		b := command.Base{Caller: caller, Login: login, ClientID: id, TradeAllowed: acc.TradeAllowed}
		o, err := decodeOrder(it, r.Now)
		if err != nil {
			slot.Result, slot.Err = s.app.Commands.Refused(ctx, b, trading.KindPlaceOrder, err)
			continue
		}
		cmds, at = append(cmds, command.PlaceOrder{Base: b, Order: o}), append(at, i)
	}
	if n := len(items) - shed; n > 0 {
		if err := s.charge(ctx, r, 0, n); err != nil {
			return nil, err
		}
	}
	for j, out := range s.app.Commands.PlaceOrder.HandleBatch(ctx, cmds) {
		slots[at[j]].Outcome = out
		if out.Err == nil && out.Result.Fresh {
			s.admission.Queued(out.Result.Op.OperationID)
		}
	}
	return slots, nil
}

// itemAccount reads a batch item's login and checks it as the pipeline checks a single
// order's: missing -1102, not an int64 -1122, out of the key's scope or without an active
// account -2022.
func (s *Server) itemAccount(ctx context.Context, r *Request, it itemParams) (int64, accountFlags, error) {
	v, ok := optional(it, "login")
	if !ok {
		return 0, accountFlags{}, errMandatory("login")
	}
	login, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, accountFlags{}, events.Reject(events.CodeInvalidLogin, "Invalid login.")
	}
	acc, err := s.account(ctx, r, login)
	if err != nil {
		return login, accountFlags{}, err
	}
	return login, accountFlags{TradeAllowed: acc.TradeAllowed}, nil
}

// accountFlags is what a batch item needs of its account.
type accountFlags struct{ TradeAllowed bool }

// batchWeight is one per item, at least one; a batch refused for its size (-1131) or a
// malformed envelope (-1130) weighs one.
func batchWeight(p *Params) int {
	if n := p.ItemCount("batchOrders"); n <= command.MaxBatchItems {
		return max(n, 1)
	}
	return 1
}

// caller is who sends the operation, for its idempotency scope and the command log.
func (s *Server) caller(c *fiber.Ctx, r *Request) command.Caller {
	id, _ := strconv.ParseInt(r.Key.ID, 10, 64)
	params := string(c.Request().URI().QueryString())
	if body := formBody(c.Request().Header.ContentType(), c.Body()); len(body) > 0 {
		params += string(body)
	}
	return command.Caller{APIKeyID: id, Requester: events.Requester{APIKeyID: id, SourceAddr: remoteAddr(c).String(),
		Method: c.Method(), Path: c.Path(), Params: withoutSignature(params), ReceivedAt: r.Now.UnixMilli()},
		Received: r.Now}
}

// withoutSignature drops the signature parameter from a raw parameter string: the command
// log keeps what was asked, never the credential.
func withoutSignature(raw string) string {
	parts := strings.Split(raw, "&")
	kept := parts[:0]
	for _, p := range parts {
		if !strings.HasPrefix(p, "signature=") {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "&")
}

// await waits for the operation's read model to be answered and returns it as reached; an
// operation nobody answered in time keeps its queued status (HTTP 200).
func (s *Server) await(ctx context.Context, res command.Result) command.Result {
	if res.Known && res.Op.Answered() {
		return res
	}
	op, found, err := s.app.Queries.Operation.Await(ctx, res.Op, WaitLimit)
	if err != nil {
		s.log.Warn("gateway: wait for operation", "operation", res.Op.OperationID, "err", err)
		return res
	}
	if found {
		res.Op, res.Known = op, true
	}
	return res
}

// answerBatch renders a batch slot by slot, waiting for every RESULT item together.
func (s *Server) answerBatch(ctx context.Context, slots []batchSlot, wait bool) []any {
	out := make([]any, len(slots))
	var wg sync.WaitGroup
	for i, it := range slots {
		if it.Err != nil {
			out[i] = slotError(it, it.Err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := it.Result
			if wait {
				r = s.await(ctx, r)
			}
			body, rej := Render(r, s.clock().UnixMilli())
			if rej != nil {
				out[i] = slotError(it, rej)
				return
			}
			out[i] = &body
		}()
	}
	wg.Wait()
	return out
}

// slotError is a batch item's refusal: the error envelope with the item's login and
// clientOrderId where readable.
func slotError(it batchSlot, err error) envelope {
	env := errorEnvelope(err)
	if env.Login == 0 {
		env.Login = it.login
	}
	if env.ClientOrderID == "" {
		env.ClientOrderID = it.coid
	}
	return env
}
