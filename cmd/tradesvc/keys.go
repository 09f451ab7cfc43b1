package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/infra/config"
	"tradesvc/infra/keys"
	"tradesvc/infra/postgres"
)

// keysCommand handles `tradesvc keys create|list|revoke|scope`.
func keysCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: tradesvc keys create|list|revoke|scope [flags]")
	}
	var loginsFlag, allowIP, apiKey string
	var readOnly bool
	sub := args[0]
	cfg, err := loadConfig("keys "+sub, args[1:], stderr, func(fs *flag.FlagSet) {
		switch sub {
		case "create":
			fs.StringVar(&loginsFlag, "logins", "", "comma-separated logins the key may use (required)")
			fs.BoolVar(&readOnly, "read-only", false, "the key may read but not trade")
			fs.StringVar(&allowIP, "allow-ip", "", "comma-separated source networks (CIDR) allowed to use the key; empty allows any")
		case "revoke":
			fs.StringVar(&apiKey, "api-key", "", "the key to revoke (required)")
		case "scope":
			fs.StringVar(&apiKey, "api-key", "", "the key to change (required)")
			fs.StringVar(&loginsFlag, "logins", "", "the key's new comma-separated logins (required)")
		}
	})
	if err != nil {
		return err
	}
	store, closeStore, err := openKeyStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeStore()
	switch sub {
	case "create":
		logins, err := parseLogins(loginsFlag)
		if err != nil {
			return err
		}
		created, err := store.Create(ctx, keys.CreateParams{Logins: logins, ReadOnly: readOnly, AllowCIDRs: config.SplitList(allowIP)})
		if err != nil {
			return err
		}
		return printJSON(stdout, map[string]any{"apiKey": created.APIKey, "apiSecret": created.APISecret,
			"logins": created.Logins, "readOnly": created.ReadOnly})
	case "list":
		recs, err := store.List(ctx)
		if err != nil {
			return err
		}
		out := make([]map[string]any, 0, len(recs))
		for _, r := range recs {
			out = append(out, map[string]any{"apiKey": r.APIKey, "logins": r.Logins, "readOnly": r.ReadOnly,
				"allowIp": cidrStrings(r), "revoked": r.RevokedAt != 0})
		}
		return printJSON(stdout, map[string]any{"keys": out})
	case "revoke":
		if apiKey == "" {
			return errors.New("--api-key is required")
		}
		if err := store.Revoke(ctx, apiKey); err != nil {
			return err
		}
		return printJSON(stdout, map[string]any{"apiKey": apiKey, "revoked": true})
	case "scope":
		if apiKey == "" {
			return errors.New("--api-key is required")
		}
		logins, err := parseLogins(loginsFlag)
		if err != nil {
			return err
		}
		if err := store.Scope(ctx, apiKey, logins); err != nil {
			return err
		}
		return printJSON(stdout, map[string]any{"apiKey": apiKey, "logins": logins})
	}
	return fmt.Errorf("unknown keys command %q (create, list, revoke, scope)", sub)
}

func openKeyStore(ctx context.Context, cfg config.Config) (*keys.Store, func(), error) {
	pool, err := postgres.Open(ctx, postgres.Config{URL: cfg.PGURL, MaxConns: 2})
	if err != nil {
		return nil, nil, err
	}
	store, err := app.KeyStore(cfg, pool)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return store, pool.Close, nil
}

func parseLogins(s string) ([]int64, error) {
	parts := config.SplitList(s)
	if len(parts) == 0 {
		return nil, errors.New("--logins is required (comma-separated integers)")
	}
	out := make([]int64, 0, len(parts))
	for _, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("login %q is not an integer", p)
		}
		out = append(out, v)
	}
	return out, nil
}

func cidrStrings(r keys.Record) []string {
	out := []string{}
	for _, p := range r.AllowCIDRs {
		out = append(out, p.String())
	}
	return out
}
