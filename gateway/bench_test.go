package gateway_test

import (
	"crypto/tls"
	"crypto/x509"
	"net/url"
	"slices"
	"strings"
	"sync"
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

// runBench drives build/do from parallel goroutines and reports req/s, p50 and p99.
func runBench(b *testing.B, hc *fasthttp.HostClient, build func(req *fasthttp.Request)) {
	b.SetParallelism(16) // 16 × GOMAXPROCS client goroutines
	var mu sync.Mutex
	var all []time.Duration
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(res)
		lat := make([]time.Duration, 0, 1024)
		for pb.Next() {
			req.Reset()
			build(req)
			t := time.Now()
			if err := hc.Do(req, res); err != nil {
				b.Error(err)
				return
			}
			lat = append(lat, time.Since(t))
			if res.StatusCode() != 200 {
				b.Errorf("status %d: %s", res.StatusCode(), res.Body())
				return
			}
		}
		mu.Lock()
		all = append(all, lat...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(all) == 0 {
		return
	}
	slices.Sort(all)
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99-ms")
}

func BenchmarkTickerPriceKeyed(b *testing.B) {
	e, hc := benchEnv(b)
	uri := e.BaseURL + "/v1/ticker/price?symbol=EURUSD"
	runBench(b, hc, func(req *fasthttp.Request) {
		req.SetRequestURI(uri)
		req.Header.Set(gateway.HeaderAPIKey, benchKey)
	})
}

func BenchmarkSignedAccount(b *testing.B) {
	e, hc := benchEnv(b)
	params := url.Values{"login": {"1001"}}
	runBench(b, hc, func(req *fasthttp.Request) {
		q, _ := gwclient.SignParams([]byte(gwtest.Secret), params, gwclient.InQuery, time.Now().UnixMilli(), 0)
		req.SetRequestURI(e.BaseURL + "/v1/account?" + q)
		req.Header.Set(gateway.HeaderAPIKey, benchKey)
	})
}
