package remote

import (
	"context"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
)

// AdminClient drives the simulator's admin hooks of a remote Server. Its methods carry the
// simulator's names, take a context, and return the resulting state.
type AdminClient struct{ c *Client }

// Admin returns the admin client sharing c's connections.
func (c *Client) Admin() *AdminClient { return &AdminClient{c: c} }

// NewAdminClient is NewClient(cfg).Admin().
func NewAdminClient(cfg ClientConfig) (*AdminClient, error) {
	c, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return c.Admin(), nil
}

// SetQuote sets symbol's quote and holds it until ResumeFeed; it returns the quote now held.
func (a *AdminClient) SetQuote(ctx context.Context, symbol string, bid, ask apd.Decimal) (QuoteState, error) {
	var out QuoteState
	err := a.c.call(ctx, a.c.callTimeout, "/admin/quote", &quoteReq{Symbol: symbol, Bid: dec.String(bid), Ask: dec.String(ask)}, &out)
	return out, err
}

// ResumeFeed releases symbol back to the quote generator.
func (a *AdminClient) ResumeFeed(ctx context.Context, symbol string) (QuoteState, error) {
	var out QuoteState
	err := a.c.call(ctx, a.c.callTimeout, "/admin/feed/resume", &symbolReq{Symbol: symbol}, &out)
	return out, err
}

// Deposit books a balance deal of amount (negative: withdrawal) on login.
func (a *AdminClient) Deposit(ctx context.Context, login int64, amount apd.Decimal) (DepositResult, error) {
	var out DepositResult
	err := a.c.call(ctx, a.c.callTimeout, "/admin/deposit", &depositReq{Login: login, Amount: dec.String(amount)}, &out)
	return out, err
}

// SetAccountTradeAllowed switches trading on or off for login and returns the account.
func (a *AdminClient) SetAccountTradeAllowed(ctx context.Context, login int64, allowed bool) (AccountState, error) {
	var out AccountState
	err := a.c.call(ctx, a.c.callTimeout, "/admin/account", &accountReq{Login: login, TradeAllowed: &allowed}, &out)
	return out, err
}

// Account returns login's account as the admin API shows it.
func (a *AdminClient) Account(ctx context.Context, login int64) (AccountState, error) {
	var out AccountState
	err := a.c.call(ctx, a.c.callTimeout, "/admin/account", &accountReq{Login: login}, &out)
	return out, err
}

// SetFault replaces the injected fault and returns the fault now in force.
func (a *AdminClient) SetFault(ctx context.Context, f FaultState) (FaultState, error) {
	var out FaultState
	err := a.c.call(ctx, a.c.callTimeout, "/admin/fault", &f, &out)
	return out, err
}

// CurrentFault returns the injected fault.
func (a *AdminClient) CurrentFault(ctx context.Context) (FaultState, error) {
	st, err := a.State(ctx)
	return st.Fault, err
}

// Logins lists the trade server's logins in ascending order.
func (a *AdminClient) Logins(ctx context.Context) ([]int64, error) {
	var out LoginsResult
	err := a.c.call(ctx, a.c.callTimeout, "/admin/logins", nil, &out)
	return out.Logins, err
}

// State returns the fault and the logins.
func (a *AdminClient) State(ctx context.Context) (StateResult, error) {
	var out StateResult
	err := a.c.call(ctx, a.c.callTimeout, "/admin/state", nil, &out)
	return out, err
}
