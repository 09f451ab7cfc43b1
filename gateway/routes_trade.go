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
	"tradesvc/query"
)

// WaitLimit is how long RESULT and the endpoints that always wait wait for an answer.
const WaitLimit = 5 * time.Second

// registerTrade registers the TRADE endpoints on the application's command handlers.
func (s *Server) registerTrade() {
	cmds := &s.app.Commands
	s.Handle(TradeEndpoint(fiber.MethodPost, "/v1/order", 1), func(c *fiber.Ctx, r *Request) error {
		res, err := cmds.PlaceOrder.Handle(c.UserContext(), command.PlaceOrder{Caller: s.caller(c, r), Login: r.Login,
			TradeAllowed: r.Account.TradeAllowed, Params: r.Params})
		if err != nil {
			return err
		}
		return s.answer(c, res, res.RespType == command.RespRESULT)
	})
	s.Handle(TradeEndpoint(fiber.MethodPut, "/v1/order", 1), func(c *fiber.Ctx, r *Request) error {
		res, err := cmds.ModifyOrder.Handle(c.UserContext(), command.ModifyOrder{Caller: s.caller(c, r), Login: r.Login,
			TradeAllowed: r.Account.TradeAllowed, Params: r.Params})
		if err != nil {
			return err
		}
		return s.answer(c, res, true)
	})
	s.Handle(TradeEndpoint(fiber.MethodDelete, "/v1/order", 1), func(c *fiber.Ctx, r *Request) error {
		res, err := cmds.CancelOrder.Handle(c.UserContext(), command.CancelOrder{Caller: s.caller(c, r), Login: r.Login,
			TradeAllowed: r.Account.TradeAllowed, Params: r.Params})
		if err != nil {
			return err
		}
		return s.answer(c, res, true)
	})
	s.Handle(TradeEndpoint(fiber.MethodPut, "/v1/position", 1), func(c *fiber.Ctx, r *Request) error {
		res, err := cmds.ModifyPosition.Handle(c.UserContext(), command.ModifyPosition{Caller: s.caller(c, r), Login: r.Login,
			TradeAllowed: r.Account.TradeAllowed, Params: r.Params})
		if err != nil {
			return err
		}
		return s.answer(c, res, true)
	})
	s.Handle(TradeEndpoint(fiber.MethodDelete, "/v1/position", 1), func(c *fiber.Ctx, r *Request) error {
		res, err := cmds.ClosePosition.Handle(c.UserContext(), command.ClosePosition{Caller: s.caller(c, r), Login: r.Login,
			TradeAllowed: r.Account.TradeAllowed, Params: r.Params})
		if err != nil {
			return err
		}
		return s.answer(c, res, res.RespType == command.RespRESULT)
	})
	closeAll := TradeEndpoint(fiber.MethodDelete, "/v1/allOpenPositions", 1)
	closeAll.Weight = fixed(5)
	s.Handle(closeAll, func(c *fiber.Ctx, r *Request) error {
		res, err := cmds.CloseAll.Handle(c.UserContext(), command.CloseAll{Caller: s.caller(c, r), Login: r.Login,
			TradeAllowed: r.Account.TradeAllowed, Params: r.Params})
		if err != nil {
			return err
		}
		return c.JSON(command.RenderSweep(res, s.clock().UnixMilli()))
	})
	s.Handle(Endpoint{Method: fiber.MethodPost, Path: "/v1/batchOrders", Security: SecTrade, Weight: batchWeight, Orders: batchOrders},
		func(c *fiber.Ctx, r *Request) error {
			res, err := cmds.BatchOrders.Handle(c.UserContext(), command.BatchOrders{Caller: s.caller(c, r), InScope: r.InScope,
				Params: r.Params})
			if err != nil {
				return err
			}
			return c.JSON(s.answerBatch(c.UserContext(), res))
		})
}

// batchOrders is the ORDERS count of a batch: one per item; a batch refused for its size
// (-1131) or a malformed envelope (-1130) counts nothing.
func batchOrders(p *Params) int {
	if n := p.ItemCount("batchOrders"); n <= command.MaxBatchItems {
		return n
	}
	return 0
}

// batchWeight is one per item, at least one.
func batchWeight(p *Params) int { return max(batchOrders(p), 1) }

// caller is who sends the operation, for its idempotency scope and the command log.
func (s *Server) caller(c *fiber.Ctx, r *Request) command.Caller {
	id, _ := strconv.ParseInt(r.Key.ID, 10, 64)
	params := string(c.Request().URI().QueryString())
	if body := formBody(c.Request().Header.ContentType(), c.Body()); len(body) > 0 {
		params += string(body)
	}
	return command.Caller{APIKeyID: id, Requester: events.Requester{APIKeyID: id, SourceAddr: remoteAddr(c).String(),
		Method: c.Method(), Path: c.Path(), Params: withoutSignature(params), ReceivedAt: r.Now.UnixMilli()}}
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

// answer writes an operation's response, after waiting (up to WaitLimit) for it to be
// answered when wait is set and it is not yet.
func (s *Server) answer(c *fiber.Ctx, res command.Result, wait bool) error {
	if wait {
		res = s.await(c.UserContext(), res)
	}
	body, rej := command.Render(res, s.clock().UnixMilli())
	if rej != nil {
		return rej
	}
	return c.JSON(&body)
}

// await waits for the operation's read model to be answered and returns it as reached; an
// operation nobody answered in time keeps its queued status (HTTP 200).
func (s *Server) await(ctx context.Context, res command.Result) command.Result {
	if res.Known && query.Answered(res.Op, res.Queued) {
		return res
	}
	op, found, err := s.app.Queries.Operation.Await(ctx, res.Op.OperationID, res.Queued, res.Op.Attempt, WaitLimit)
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
func (s *Server) answerBatch(ctx context.Context, res command.BatchResult) []any {
	out := make([]any, len(res.Items))
	var wg sync.WaitGroup
	for i, it := range res.Items {
		if it.Err != nil {
			out[i] = s.slotError(it, it.Err)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := it.Result
			if res.RespType == command.RespRESULT {
				r = s.await(ctx, r)
			}
			body, rej := command.Render(r, s.clock().UnixMilli())
			if rej != nil {
				out[i] = s.slotError(it, rej)
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
func (s *Server) slotError(it command.BatchItem, err error) envelope {
	env := errorEnvelope(err)
	if env.Login == 0 {
		env.Login = it.Login
	}
	if env.ClientOrderID == "" {
		env.ClientOrderID = it.ClientOrderID
	}
	return env
}
