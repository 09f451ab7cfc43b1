package query

import (
	"context"
	"fmt"
	"slices"
)

// AccountsQuery lists the accounts of a key: Logins is the key's scope.
type AccountsQuery struct {
	Logins []int64
}

// List answers GET /v1/accounts with exactly the key's logins that exist and are active
// (archived accounts are absent), ordered by login: one item per active account in scope.
// Accounts the reader returns outside the asked set are dropped, so the answer never exceeds
// the key's scope.
func (h AccountHandler) List(ctx context.Context, q AccountsQuery) ([]AccountItem, error) {
	out := []AccountItem{}
	if len(q.Logins) == 0 {
		return out, nil
	}
	rows, err := h.accounts.Accounts(ctx, q.Logins)
	if err != nil {
		return nil, fmt.Errorf("read accounts: %w", err)
	}
	seen := make(map[int64]bool, len(rows))
	for _, a := range rows {
		if seen[a.Login] || !slices.Contains(q.Logins, a.Login) {
			continue
		}
		seen[a.Login] = true
		out = append(out, AccountItem{Login: a.Login, Demo: a.Demo})
	}
	slices.SortFunc(out, func(a, b AccountItem) int {
		switch {
		case a.Login < b.Login:
			return -1
		case a.Login > b.Login:
			return 1
		}
		return 0
	})
	return out, nil
}
