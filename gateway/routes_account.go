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
		func(c *fiber.Ctx, r *Request) error {
			res, err := h.Account.Handle(c.UserContext(), query.AccountQuery{Login: r.Login})
			if err != nil {
				return err
			}
			return c.JSON(&res)
		})
	s.Handle(Endpoint{Method: fiber.MethodGet, Path: "/v1/accounts", Security: SecUserData, Weight: fixed(5)},
		func(c *fiber.Ctx, r *Request) error {
			res, err := h.Accounts.Handle(c.UserContext(), query.AccountsQuery{Logins: r.Key.Logins})
			if err != nil {
				return err
			}
			return c.JSON(res)
		})
}
