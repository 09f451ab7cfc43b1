package gateway_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"tradesvc/gateway"
	"tradesvc/gateway/gwclient"
	"tradesvc/gateway/gwtest"
)

// Benchmarks run against a real TLS listener with keep-alive connections and parallel
// clients (fasthttp client, 64 connections). They report req/s and latency percentiles:
//
//	go test ./gateway/ -run '^$' -bench 'TickerPriceKeyed|SignedAccount' -benchtime 5s
//
// Client and server share the machine, so the figures are a floor for the server alone.

const benchKey = "bench-key"

func benchEnv(b *testing.B) (*gwtest.Env, *fasthttp.HostClient) {
	b.Helper()
	e := gwtest.NewEnv()
	e.Keys.Put(gateway.Key{ID: "bench", APIKey: benchKey, Secret: []byte(gwtest.Secret), Logins: []int64{gwtest.LoginReal},
		WeightPerMinute: 1 << 30, Orders10s: 1 << 30, Orders1m: 1 << 30})
	e.Start(b, gateway.Config{})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(e.CA)
	hc := &fasthttp.HostClient{
		Addr:      strings.TrimPrefix(e.BaseURL, "https://"),
		IsTLS:     true,
		TLSConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxConns:  64,
	}
	return e, hc
}

func BenchmarkTickerPriceKeyed(b *testing.B) {
	e, hc := benchEnv(b)
	uri := e.BaseURL + "/v1/ticker/price?symbol=EURUSD"
	gwtest.RunLoad(b, hc, 16, func(req *fasthttp.Request) {
		req.SetRequestURI(uri)
		req.Header.Set(gateway.HeaderAPIKey, benchKey)
	})
}

func BenchmarkSignedAccount(b *testing.B) {
	e, hc := benchEnv(b)
	params := url.Values{"login": {"1001"}}
	gwtest.RunLoad(b, hc, 16, func(req *fasthttp.Request) {
		q, _ := gwclient.SignParams([]byte(gwtest.Secret), params, gwclient.InQuery, time.Now().UnixMilli(), 0)
		req.SetRequestURI(e.BaseURL + "/v1/account?" + q)
		req.Header.Set(gateway.HeaderAPIKey, benchKey)
	})
}
