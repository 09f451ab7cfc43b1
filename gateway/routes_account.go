package gateway

import (
	"github.com/gofiber/fiber/v2"

	"tradesvc/query"
)

// registerAccount registers the account reads (USER_DATA, signed).
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
