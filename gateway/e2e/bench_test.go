package e2e_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwtest"
)

// End-to-end benchmarks: the whole service in-process against the real Kafka, Postgres and
// ClickHouse, clients over TLS keep-alive connections (fasthttp, up to 64 connections,
// 4 × GOMAXPROCS client goroutines, i.e. that many requests in flight). Client, service and
// the three servers share the machine, so the figures are a floor for the service. More
// goroutines add no throughput on 2 cores, only queueing: p99 grows with the number of
// requests in flight (see docs/benchmarks.md). Run:
//
//	go test ./gateway/e2e/ -run '^$' -bench E2E -benchtime 5s
//
// Floors: 10,000 req/s for the keyed ticker, 3,000 req/s for the signed account read,
// p99 under 20 ms for both.

// benchConns is the number of keep-alive TLS connections the client keeps to the gateway.
const benchConns = 64

// benchEnv starts the service once per benchmark (the parent benchmark runs once because it
// has a sub-benchmark), with a key whose weight budget the benchmark cannot exhaust.
func benchEnv(b *testing.B) (*env, []byte, *fasthttp.HostClient) {
	b.Helper()
	e := startEnv(b, "BTCUSD")
	k := e.unlimitedKey(b)
	e.main = k
	hc := &fasthttp.HostClient{
		Addr:      strings.TrimPrefix(e.svc.BaseURL, "https://"),
		IsTLS:     true,
		TLSConfig: e.svc.TLS.Clone(),
		MaxConns:  benchConns,
	}
	return e, k.Secret, hc
}

// inFlight × GOMAXPROCS requests in flight: enough to saturate 2 cores (see docs/benchmarks.md).
const inFlight = 4

// BenchmarkE2ETickerPrice: keyed GET /v1/ticker/price?symbol=BTCUSD, served from the
// in-memory market projection fed by the tick topic.
func BenchmarkE2ETickerPrice(b *testing.B) {
	e, _, hc := benchEnv(b)
	uri := e.svc.BaseURL + "/v1/ticker/price?symbol=BTCUSD"
	apiKey := e.main.APIKey
	b.Run("tls-keepalive", func(b *testing.B) {
		gwtest.RunLoad(b, hc, inFlight, func(req *fasthttp.Request) {
			req.SetRequestURI(uri)
			req.Header.Set(gwclient.HeaderAPIKey, apiKey)
		})
	})
}

// BenchmarkE2ESignedAccount: signed GET /v1/account?login=1001 (HMAC check, login scope,
// a Postgres read of the account read model).
func BenchmarkE2ESignedAccount(b *testing.B) {
	e, secret, hc := benchEnv(b)
	base := e.svc.BaseURL + "/v1/account?"
	apiKey := e.main.APIKey
	params := url.Values{"login": {"1001"}}
	b.Run("tls-keepalive", func(b *testing.B) {
		gwtest.RunLoad(b, hc, inFlight, func(req *fasthttp.Request) {
			q, _ := gwclient.SignParams(secret, params, gwclient.InQuery, time.Now().UnixMilli(), 0)
			req.SetRequestURI(base + q)
			req.Header.Set(gwclient.HeaderAPIKey, apiKey)
		})
	})
}
