package remote

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"tradesvc/infra/mt5"
)

// struct{} request body for the argument-less calls.
type noArgs struct{}

// routePort registers one endpoint per mt5.TradeServer method. Each handler runs under the
// request's context, so a client that gives up (or dies) cancels the call on this side.
func (s *server) routePort() {
	p := s.port
	handle(s, "/port/send", func(r *http.Request, req *mt5.TradeRequest) (any, error) {
		res, err := p.Send(r.Context(), *req)
		return &res, err
	})
	handle(s, "/port/ordersByTag", func(r *http.Request, req *loginTagReq) (any, error) {
		return nonNil(p.OrdersByTag(r.Context(), req.Login, req.Tag))
	})
	handle(s, "/port/dealsByTag", func(r *http.Request, req *loginTagReq) (any, error) {
		return nonNil(p.DealsByTag(r.Context(), req.Login, req.Tag))
	})
	handle(s, "/port/facts", func(r *http.Request, req *pollReq) (any, error) {
		facts, err := longPoll(r.Context(), s.life, req, p.Facts)
		return &factsResp{Facts: facts}, err
	})
	handle(s, "/port/ticks", func(r *http.Request, req *pollReq) (any, error) {
		ticks, err := longPoll(r.Context(), s.life, req, p.Ticks)
		return &ticksResp{Ticks: ticks}, err
	})
	handle(s, "/port/serverInfo", func(r *http.Request, _ *noArgs) (any, error) {
		v, err := p.ServerInfo(r.Context())
		return &v, err
	})
	handle(s, "/port/symbols", func(r *http.Request, _ *noArgs) (any, error) {
		return nonNil(p.Symbols(r.Context()))
	})
	handle(s, "/port/groups", func(r *http.Request, _ *noArgs) (any, error) {
		return nonNil(p.Groups(r.Context()))
	})
	handle(s, "/port/accounts", func(r *http.Request, _ *noArgs) (any, error) {
		return nonNil(p.Accounts(r.Context()))
	})
	handle(s, "/port/account", func(r *http.Request, req *loginReq) (any, error) {
		v, err := p.Account(r.Context(), req.Login)
		return &v, err
	})
	handle(s, "/port/openOrders", func(r *http.Request, req *loginReq) (any, error) {
		return nonNil(p.OpenOrders(r.Context(), req.Login))
	})
	handle(s, "/port/positions", func(r *http.Request, req *loginReq) (any, error) {
		return nonNil(p.Positions(r.Context(), req.Login))
	})
	handle(s, "/port/orderHistory", func(r *http.Request, req *historyReq) (any, error) {
		return nonNil(p.OrderHistory(r.Context(), req.Login, req.From, req.To))
	})
	handle(s, "/port/dealHistory", func(r *http.Request, req *historyReq) (any, error) {
		return nonNil(p.DealHistory(r.Context(), req.Login, req.From, req.To))
	})
	handle(s, "/port/dayStats", func(r *http.Request, req *symbolReq) (any, error) {
		v, err := p.DayStats(r.Context(), req.Symbol)
		return &v, err
	})
	handle(s, "/port/quote", func(r *http.Request, req *symbolReq) (any, error) {
		v, err := p.Quote(r.Context(), req.Symbol)
		return &v, err
	})
}

// nonNil turns a nil slice into an empty one so the wire says [] rather than null.
func nonNil[T any](v []T, err error) (any, error) {
	if v == nil {
		v = []T{}
	}
	return v, err
}

// longPoll runs one bounded wait of a feed. Running out of the poll's own wait is not an
// error: the answer is an empty batch and the client polls again from the same cursor. The
// server shutting down (life ending) answers mt5.ErrClosed at once.
func longPoll[T any](ctx, life context.Context, req *pollReq, feed func(context.Context, uint64, int) ([]T, error)) ([]T, error) {
	wait := time.Duration(req.WaitMs) * time.Millisecond
	if wait <= 0 {
		wait = DefaultPollWait
	}
	wait = min(wait, MaxPollWait)
	n := req.Max
	if n <= 0 || n > MaxPollBatch {
		n = MaxPollBatch
	}
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	stop := context.AfterFunc(life, cancel)
	defer stop()
	out, err := feed(pctx, req.After, n)
	if err != nil && life.Err() != nil {
		return nil, fmt.Errorf("remote: server shutting down: %w", mt5.ErrClosed)
	}
	if err != nil && ctx.Err() == nil && pctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		return []T{}, nil
	}
	if out == nil {
		out = []T{}
	}
	return out, err
}
