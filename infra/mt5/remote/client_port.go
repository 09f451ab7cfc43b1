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
	var out []mt5.Order
	err := c.call(ctx, c.callTimeout, "/port/ordersByTag", &loginTagReq{Login: login, Tag: tag}, &out)
	return out, err
}

// DealsByTag implements mt5.TradeServer.
func (c *Client) DealsByTag(ctx context.Context, login int64, tag string) ([]mt5.Deal, error) {
	var out []mt5.Deal
	err := c.call(ctx, c.callTimeout, "/port/dealsByTag", &loginTagReq{Login: login, Tag: tag}, &out)
	return out, err
}

// Facts long-polls the fact feed: it returns as soon as the server has at least one fact
// after the cursor, and keeps polling (each poll bounded by PollWait on the server) until
// then or until ctx ends, in which case it returns ctx's error.
func (c *Client) Facts(ctx context.Context, after uint64, max int) ([]mt5.Fact, error) {
	for {
		var out factsResp
		if err := c.poll(ctx, "/port/facts", after, max, &out); err != nil {
			return nil, err
		}
		if len(out.Facts) > 0 {
			return out.Facts, nil
		}
	}
}

// Ticks long-polls the tick feed like Facts.
func (c *Client) Ticks(ctx context.Context, after uint64, max int) ([]mt5.Tick, error) {
	for {
		var out ticksResp
		if err := c.poll(ctx, "/port/ticks", after, max, &out); err != nil {
			return nil, err
		}
		if len(out.Ticks) > 0 {
			return out.Ticks, nil
		}
	}
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
	var out mt5.ServerInfo
	err := c.call(ctx, c.callTimeout, "/port/serverInfo", nil, &out)
	return out, err
}

// Symbols implements mt5.TradeServer.
func (c *Client) Symbols(ctx context.Context) ([]mt5.Symbol, error) {
	var out []mt5.Symbol
	err := c.call(ctx, c.callTimeout, "/port/symbols", nil, &out)
	return out, err
}

// Groups implements mt5.TradeServer.
func (c *Client) Groups(ctx context.Context) ([]mt5.Group, error) {
	var out []mt5.Group
	err := c.call(ctx, c.callTimeout, "/port/groups", nil, &out)
	return out, err
}

// Accounts implements mt5.TradeServer.
func (c *Client) Accounts(ctx context.Context) ([]mt5.Account, error) {
	var out []mt5.Account
	err := c.call(ctx, c.callTimeout, "/port/accounts", nil, &out)
	return out, err
}

// Account implements mt5.TradeServer; ErrUnknownLogin crosses the wire.
func (c *Client) Account(ctx context.Context, login int64) (mt5.Account, error) {
	var out mt5.Account
	if err := c.call(ctx, c.callTimeout, "/port/account", &loginReq{Login: login}, &out); err != nil {
		return mt5.Account{}, err
	}
	return out, nil
}

// OpenOrders implements mt5.TradeServer.
func (c *Client) OpenOrders(ctx context.Context, login int64) ([]mt5.Order, error) {
	var out []mt5.Order
	err := c.call(ctx, c.callTimeout, "/port/openOrders", &loginReq{Login: login}, &out)
	return out, err
}

// Positions implements mt5.TradeServer.
func (c *Client) Positions(ctx context.Context, login int64) ([]mt5.Position, error) {
	var out []mt5.Position
	err := c.call(ctx, c.callTimeout, "/port/positions", &loginReq{Login: login}, &out)
	return out, err
}

// OrderHistory implements mt5.TradeServer.
func (c *Client) OrderHistory(ctx context.Context, login int64, from, to int64) ([]mt5.Order, error) {
	var out []mt5.Order
	err := c.call(ctx, c.callTimeout, "/port/orderHistory", &historyReq{Login: login, From: from, To: to}, &out)
	return out, err
}

// DealHistory implements mt5.TradeServer.
func (c *Client) DealHistory(ctx context.Context, login int64, from, to int64) ([]mt5.Deal, error) {
	var out []mt5.Deal
	err := c.call(ctx, c.callTimeout, "/port/dealHistory", &historyReq{Login: login, From: from, To: to}, &out)
	return out, err
}

// DayStats implements mt5.TradeServer; ErrUnknownSymbol crosses the wire.
func (c *Client) DayStats(ctx context.Context, symbol string) (mt5.DayStats, error) {
	var out mt5.DayStats
	if err := c.call(ctx, c.callTimeout, "/port/dayStats", &symbolReq{Symbol: symbol}, &out); err != nil {
		return mt5.DayStats{}, err
	}
	return out, nil
}

// Quote implements mt5.TradeServer; ErrNoQuote / ErrUnknownSymbol cross the wire.
func (c *Client) Quote(ctx context.Context, symbol string) (mt5.Tick, error) {
	var out mt5.Tick
	if err := c.call(ctx, c.callTimeout, "/port/quote", &symbolReq{Symbol: symbol}, &out); err != nil {
		return mt5.Tick{}, err
	}
	return out, nil
}
