package gateway_test

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"

	"github.com/gofiber/fiber/v2"

	"tradesvc/gateway"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwtest"
)

var bg = context.Background()

// start serves a seeded gateway; register (optional) adds endpoints before serving.
func start(t *testing.T, cfg gateway.Config, register func(*gateway.Server)) (*gwtest.Env, *gwclient.Client) {
	t.Helper()
	e := gwtest.NewEnv()
	srv := e.Build(t, cfg)
	if register != nil {
		register(srv)
	}
	e.Start(t, cfg)
	return e, e.Client()
}

// expectErr asserts the status and the envelope's code.
func expectErr(t *testing.T, r *gwclient.Response, status, code int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status = %d, want %d (body %s)", r.Status, status, r.Body)
	}
	e, ok := r.Err()
	if !ok {
		t.Fatalf("body is not an error envelope: %s", r.Body)
	}
	if e.Code != code {
		t.Fatalf("code = %d, want %d (msg %q)", e.Code, code, e.Msg)
	}
	if e.Msg == "" {
		t.Fatalf("empty msg")
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("content type %q", ct)
	}
}

func expectOK(t *testing.T, r *gwclient.Response) {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("status = %d, body %s", r.Status, r.Body)
	}
}

func must(t *testing.T) func(*gwclient.Response, error) *gwclient.Response {
	return func(r *gwclient.Response, err error) *gwclient.Response {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
}

func decode[T any](t *testing.T, r *gwclient.Response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
	return v
}

func vals(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// tradeEndpoint registers a TRADE test endpoint POST /v1/test/trade counting 1 order,
// account-scoped with the account read, that checks RequireTradeAllowed and echoes.
func tradeEndpoint(calls *int) func(*gateway.Server) {
	return func(s *gateway.Server) {
		s.Handle(gateway.TradeEndpoint(fiber.MethodPost, "/v1/test/trade", "", 1),
			func(c *fiber.Ctx, r *gateway.Request) error {
				if err := r.RequireTradeAllowed(); err != nil {
					return err
				}
				*calls++
				return c.JSON(fiber.Map{"login": r.Login, "symbol": r.Params.Optional("symbol")})
			})
	}
}
