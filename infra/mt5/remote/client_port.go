package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"tradesvc/infra/mt5"
)

// Send submits req. A nil error means the trade server answered in-band. Any failure to
// get that answer across the wire (refused, reset, timeout, garbled answer) returns an
// error wrapping mt5.ErrNoAnswer — never a retcode — because the request may have been
// executed; the caller reconciles by its tag. The client never resends a Send by itself.
func (c *Client) Send(ctx context.Context, req mt5.TradeRequest) (mt5.TradeResult, error) {
	var res mt5.TradeResult
	err := c.call(ctx, c.callTimeout, "/port/send", &req, &res)
	var te *transportError
	if errors.As(err, &te) {
		return mt5.TradeResult{}, fmt.Errorf("remote: send: outcome unknown: %w: %w", mt5.ErrNoAnswer, te.err)
	}
	if err != nil {
		return mt5.TradeResult{}, err
	}
	return res, nil
}

// OrdersByTag implements mt5.TradeServer.
func (c *Client) OrdersByTag(ctx context.Context, login int64, tag string) ([]mt5.Order, error) {
	return fetch[[]mt5.Order](ctx, c, "/port/ordersByTag", &loginTagReq{Login: login, Tag: tag})
}

// DealsByTag implements mt5.TradeServer.
func (c *Client) DealsByTag(ctx context.Context, login int64, tag string) ([]mt5.Deal, error) {
	return fetch[[]mt5.Deal](ctx, c, "/port/dealsByTag", &loginTagReq{Login: login, Tag: tag})
}

// Facts long-polls the fact feed: it returns as soon as the server has at least one fact
// after the cursor, and keeps polling (each poll bounded by PollWait on the server) until
// then or until ctx ends, in which case it returns ctx's error.
func (c *Client) Facts(ctx context.Context, after uint64, max int) ([]mt5.Fact, error) {
	return pollUntilAny(ctx, c, "/port/facts", after, max, func(r *factsResp) []mt5.Fact { return r.Facts })
}

// Ticks long-polls the tick feed like Facts.
func (c *Client) Ticks(ctx context.Context, after uint64, max int) ([]mt5.Tick, error) {
	return pollUntilAny(ctx, c, "/port/ticks", after, max, func(r *ticksResp) []mt5.Tick { return r.Ticks })
}

// pollUntilAny polls path until the server has at least one item after the cursor, or ctx ends
// (its error).
func pollUntilAny[R, T any](ctx context.Context, c *Client, path string, after uint64, max int, items func(*R) []T) ([]T, error) {
	for {
		var out R
		if err := c.poll(ctx, path, after, max, &out); err != nil {
			return nil, err
		}
		if got := items(&out); len(got) > 0 {
			return got, nil
		}
	}
}

// fetch makes one call of the port under the call timeout and returns its answer decoded as
// T (T's zero value with an error).
func fetch[T any](ctx context.Context, c *Client, path string, req any) (T, error) {
	var out T
	if err := c.call(ctx, c.callTimeout, path, req, &out); err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// poll runs one long poll. The server's wait is cut to the caller's deadline so that an
// empty answer arrives before the caller gives up.
func (c *Client) poll(ctx context.Context, path string, after uint64, n int, out any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	wait := c.pollWait
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	wait = max(wait, time.Millisecond)
	req := &pollReq{After: after, Max: n, WaitMs: wait.Milliseconds()}
	if req.WaitMs == 0 {
		req.WaitMs = 1
	}
	err := c.call(ctx, wait+pollSlack, path, req, out)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// ServerInfo implements mt5.TradeServer.
func (c *Client) ServerInfo(ctx context.Context) (mt5.ServerInfo, error) {
	return fetch[mt5.ServerInfo](ctx, c, "/port/serverInfo", nil)
}

// Symbols implements mt5.TradeServer.
func (c *Client) Symbols(ctx context.Context) ([]mt5.Symbol, error) {
	return fetch[[]mt5.Symbol](ctx, c, "/port/symbols", nil)
}

// Groups implements mt5.TradeServer.
func (c *Client) Groups(ctx context.Context) ([]mt5.Group, error) {
	return fetch[[]mt5.Group](ctx, c, "/port/groups", nil)
}

// Accounts implements mt5.TradeServer.
func (c *Client) Accounts(ctx context.Context) ([]mt5.Account, error) {
	return fetch[[]mt5.Account](ctx, c, "/port/accounts", nil)
}

// Account implements mt5.TradeServer; ErrUnknownLogin crosses the wire.
func (c *Client) Account(ctx context.Context, login int64) (mt5.Account, error) {
	return fetch[mt5.Account](ctx, c, "/port/account", &loginReq{Login: login})
}

// OpenOrders implements mt5.TradeServer.
func (c *Client) OpenOrders(ctx context.Context, login int64) ([]mt5.Order, error) {
	return fetch[[]mt5.Order](ctx, c, "/port/openOrders", &loginReq{Login: login})
}

// Positions implements mt5.TradeServer.
func (c *Client) Positions(ctx context.Context, login int64) ([]mt5.Position, error) {
	return fetch[[]mt5.Position](ctx, c, "/port/positions", &loginReq{Login: login})
}

// OrderHistory implements mt5.TradeServer.
func (c *Client) OrderHistory(ctx context.Context, login int64, from, to int64) ([]mt5.Order, error) {
	return fetch[[]mt5.Order](ctx, c, "/port/orderHistory", &historyReq{Login: login, From: from, To: to})
}

// DealHistory implements mt5.TradeServer.
func (c *Client) DealHistory(ctx context.Context, login int64, from, to int64) ([]mt5.Deal, error) {
	return fetch[[]mt5.Deal](ctx, c, "/port/dealHistory", &historyReq{Login: login, From: from, To: to})
}

// DayStats implements mt5.TradeServer; ErrUnknownSymbol crosses the wire.
func (c *Client) DayStats(ctx context.Context, symbol string) (mt5.DayStats, error) {
	return fetch[mt5.DayStats](ctx, c, "/port/dayStats", &symbolReq{Symbol: symbol})
}

// Quote implements mt5.TradeServer; ErrNoQuote / ErrUnknownSymbol cross the wire.
func (c *Client) Quote(ctx context.Context, symbol string) (mt5.Tick, error) {
	return fetch[mt5.Tick](ctx, c, "/port/quote", &symbolReq{Symbol: symbol})
}
