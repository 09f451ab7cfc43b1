package gwtest

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// RunLoad is the load generator of the gateway benchmarks: b.RunParallel with parallelism ×
// GOMAXPROCS goroutines (that many requests in flight) sending what build makes through hc
// (keep-alive connections), failing on any answer but 200, and reporting req/s, p50_ms and
// p99_ms.
func RunLoad(b *testing.B, hc *fasthttp.HostClient, parallelism int, build func(req *fasthttp.Request)) {
	b.SetParallelism(parallelism)
	var mu sync.Mutex
	var all []time.Duration
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		defer fasthttp.ReleaseRequest(req)
		defer fasthttp.ReleaseResponse(res)
		lat := make([]time.Duration, 0, 4096)
		for pb.Next() {
			req.Reset()
			build(req)
			t0 := time.Now()
			if err := hc.Do(req, res); err != nil {
				b.Error(err)
				return
			}
			lat = append(lat, time.Since(t0))
			if res.StatusCode() != fasthttp.StatusOK {
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
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "p99_ms")
}
