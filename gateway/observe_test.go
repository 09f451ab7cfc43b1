package gateway_test

import (
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"tradesvc/gateway"
)

type observed struct {
	method, route string
	status        int
}

func TestOnRequestSeesEveryAnswerWithItsRouteAndFinalStatus(t *testing.T) {
	var mu sync.Mutex
	var got []observed
	cfg := gateway.Config{OnRequest: func(method, route string, status int, took time.Duration) {
		if took <= 0 {
			t.Errorf("%s %s took %v", method, route, took)
		}
		mu.Lock()
		got = append(got, observed{method, route, status})
		mu.Unlock()
	}}
	_, c := start(t, cfg, func(s *gateway.Server) {
		s.Handle(gateway.Endpoint{Method: "GET", Path: "/v1/test/panic"}, func(*fiber.Ctx, *gateway.Request) error {
			panic("boom")
		})
	})
	must(t)(c.Raw(bg, "GET", "/v1/ping", "", "", false))
	must(t)(c.Raw(bg, "GET", "/v1/ticker/price", "symbol=NOPE", "", true)) // a pipeline error: -1121
	must(t)(c.Raw(bg, "GET", "/v1/nope", "", "", false))
	must(t)(c.Raw(bg, "POST", "/v1/ping", "", "", false))
	must(t)(c.Raw(bg, "GET", "/v1/premiumIndex", "", "", false))
	must(t)(c.Raw(bg, "GET", "/v1/test/panic", "", "", false))
	want := []observed{
		{"GET", "/v1/ping", 200},
		{"GET", "/v1/ticker/price", 400},
		{"GET", "unmatched", 404},
		{"POST", "unmatched", 405},
		{"GET", "/v1/premiumIndex", 410},
		{"GET", "/v1/test/panic", 500},
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("observed %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("request %d observed %+v, want %+v", i, got[i], want[i])
		}
	}
}
