package gateway

import (
	"github.com/gofiber/fiber/v2"

	"tradesvc/query"
)

// registerAccount registers the account reads (USER_DATA, signed). GET /v1/account is
// account-scoped without RequireAccount: its handler reads the account itself (fresh, for the
// balances it returns) and answers -2022 when the account is nonexistent or inactive, so the
// pipeline's read (which may be cached) would only double the work. GET /v1/accounts lists
// only the key's active accounts and takes no login.
func (s *Server) registerAccount(h query.Handlers) {
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/account", Security: SecUserData, AccountScoped: true},
		answer(func(r *Request) (query.AccountQuery, error) { return query.AccountQuery{Login: r.Login}, nil }, h.Account.Handle))
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/accounts", Security: SecUserData, Weight: fixed(5)},
		answer(func(r *Request) (query.AccountsQuery, error) { return query.AccountsQuery{Logins: r.Key.Logins}, nil },
			h.Account.List))
}
