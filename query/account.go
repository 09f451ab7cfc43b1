package query

import (
	"context"
	"errors"
	"fmt"

	"tradesvc/events"
	"tradesvc/events/dec"
)

// AccountReader reads the account read model (Postgres). Only active accounts are found.
type AccountReader interface {
	// Account returns the account of login; ok is false when it does not exist or is inactive.
	Account(ctx context.Context, login int64) (Account, bool, error)
	// Accounts returns the active accounts among logins, in any order; missing ones are absent.
	Accounts(ctx context.Context, logins []int64) ([]Account, error)
}

// AccountQuery asks for one account. The caller has already checked that Login is in the
// key's scope.
type AccountQuery struct {
	Login int64
}

// AccountHandler answers GET /v1/account (Handle) and GET /v1/accounts (List) from the
// account read model.
type AccountHandler struct {
	accounts AccountReader
}

// NewAccountHandler builds the handler.
func NewAccountHandler(accounts AccountReader) (AccountHandler, error) {
	if accounts == nil {
		return AccountHandler{}, errors.New("query: nil AccountReader")
	}
	return AccountHandler{accounts: accounts}, nil
}

// Handle returns the account record, or -2022 when the account does not exist or is inactive.
func (h AccountHandler) Handle(ctx context.Context, q AccountQuery) (AccountRecord, error) {
	a, ok, err := h.accounts.Account(ctx, q.Login)
	if err != nil {
		return AccountRecord{}, fmt.Errorf("read account %d: %w", q.Login, err)
	}
	if !ok {
		return AccountRecord{}, events.Reject(events.CodeLoginOutOfScope, "Login is out of scope, nonexistent or inactive.")
	}
	return toAccountRecord(a), nil
}

// toAccountRecord formats money at 4 places and marginLevel at 2 ("0.00" with no position,
// which the read model stores as zero).
func toAccountRecord(a Account) AccountRecord {
	return AccountRecord{
		Login: a.Login, Group: a.Group, Currency: a.Currency, Leverage: a.Leverage,
		Balance: money(a.Balance), Credit: money(a.Credit), Equity: money(a.Equity), Margin: money(a.Margin),
		FreeMargin: money(a.FreeMargin), Profit: money(a.Profit), MarginLevel: dec.Fixed(a.MarginLevel, 2),
		TradeAllowed: a.TradeAllowed, UpdateTime: a.UpdateTime,
	}
}
