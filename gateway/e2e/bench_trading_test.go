package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
)

// Trading benchmarks: the whole order path (gateway, Kafka, executor, simulator, Kafka,
// projection, Postgres, change feed) in one process against the real servers, and in the
// same run the floor that path cannot go below with the same clients and settings: one
// HTTPS round trip, the two synchronous Kafka produce-and-consume hops an order crosses
// (commands → executor, executions → projection) and one Postgres commit.
//
//	go test ./gateway/e2e/ -run '^$' -bench 'E2EOrder' -benchtime 1x
//
// TRADESVC_BENCH_SECONDS shortens the runs (default 60 s for RESULT, 30 s for ACK);
// TRADESVC_BENCH_ACK_RATE sets the ACK load (default 1000 orders/s).
// Floors (issue 7): RESULT p50 at most 3 × the floor and p99 under 40 ms at 200 orders/s;
// at least 1,000 orders/s sustained with p99 acceptance-to-FILLED under 1 s.

// benchLogins spread the load over accounts (one account's operations are sent in order).
var benchLogins = []int64{loginReal1, loginReal2, loginDemo, loginCent}

func benchSeconds(def int) time.Duration {
	if v, err := strconv.Atoi(os.Getenv("TRADESVC_BENCH_SECONDS")); err == nil && v > 0 {
		return time.Duration(v) * time.Second
	}
	return time.Duration(def) * time.Second
}

// tradingBenchEnv starts the service and funds the bench accounts so that margin never runs
// out however many positions the run opens.
func tradingBenchEnv(b *testing.B) (*env, *fasthttp.HostClient) {
	b.Helper()
	e, _, hc := benchEnv(b)
	for _, l := range benchLogins {
		if _, err := e.svc.App.Sim().Deposit(l, dec.MustParse("100000000")); err != nil {
			b.Fatal(err)
		}
	}
	e.holdQuote(b, "BTCUSD", "60000.00", "60015.00")
	// An open-loop load keeps as many requests in flight as latency demands: more
	// connections than the read benchmarks, and a request waits for one rather than failing.
	hc.MaxConns = 512
	hc.MaxConnWaitTimeout = 30 * time.Second
	return e, hc
}

// orderRequest fills req with a signed POST /v1/order (form body) MARKET BUY 0.01 BTCUSD.
func orderRequest(e *env, req *fasthttp.Request, login int64, coid, respType string) {
	p := market(login, "BTCUSD", "BUY", "0.01", "newClientOrderId", coid, "newOrderRespType", respType)
	_, body := gwclient.SignParams(e.main.Secret, p, gwclient.InBody, time.Now().UnixMilli(), 0)
	req.SetRequestURI(e.svc.BaseURL + "/v1/order")
	req.Header.SetMethod("POST")
	req.Header.SetContentType("application/x-www-form-urlencoded")
	req.Header.Set(gwclient.HeaderAPIKey, e.main.APIKey)
	req.SetBodyString(body)
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, len(d)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// floor measures, with the service's own settings, the raw round trips an order crosses.
type floor struct {
	https, kafka2, pg time.Duration // p50 of each
}

func (f floor) total() time.Duration { return f.https + f.kafka2 + f.pg }

func measureFloor(b *testing.B, e *env, hc *fasthttp.HostClient) floor {
	b.Helper()
	ctx := context.Background()
	var f floor
	// One HTTPS keep-alive round trip: GET /v1/ping on the same client.
	var lat []time.Duration
	req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	for range 500 {
		req.Reset()
		req.SetRequestURI(e.svc.BaseURL + "/v1/ping")
		t0 := time.Now()
		if err := hc.Do(req, res); err != nil || res.StatusCode() != 200 {
			b.Fatalf("ping: %v %d", err, res.StatusCode())
		}
		lat = append(lat, time.Since(t0))
	}
	fasthttp.ReleaseRequest(req)
	fasthttp.ReleaseResponse(res)
	f.https = pct(lat, 50)

	// Two chained hops: append (idempotent producer, acks from all replicas) to topic A,
	// consumed by a batch consumer (NoWait) that appends to topic B, consumed the same way.
	kcfg := kafka.Config{Brokers: []string{testenv.Kafka(b)}, TopicPrefix: testenv.TopicPrefix(b)}
	ta := events.Topic{Name: "bench.hop.a", Partitions: 1, KeyedBy: "login", RetentionMs: 3600000}
	tb := events.Topic{Name: "bench.hop.b", Partitions: 1, KeyedBy: "login", RetentionMs: 3600000}
	if err := kafka.EnsureTopics(ctx, kcfg, []events.Topic{ta, tb}); err != nil {
		b.Fatal(err)
	}
	pub, err := kafka.NewPublisher(kcfg, testenv.Logger())
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	ap, err := kafka.NewAppender(pub, "bench", time.Now)
	if err != nil {
		b.Fatal(err)
	}
	arrived := make(chan string, 16)
	runCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	consume := func(group string, topic events.Topic, h batch.Handler) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = batch.Run(runCtx, batch.Config{Brokers: kcfg.Brokers, Group: kcfg.Topic(group),
				Topics: []string{kcfg.Topic(topic.Name)}, MaxWait: batch.NoWait, Sarama: kcfg.ConsumerConfig(),
				Logger: testenv.Logger()}, h)
		}()
	}
	consume("bench.hop.a", ta, func(ctx context.Context, msgs []batch.Message) error {
		evs := make([]events.Event, 0, len(msgs))
		for _, m := range msgs {
			evs = append(evs, m.Event)
		}
		return ap.Append(ctx, tb, evs...)
	})
	consume("bench.hop.b", tb, func(_ context.Context, msgs []batch.Message) error {
		for _, m := range msgs {
			if o, ok := m.Event.(*events.ExecutionSent); ok {
				arrived <- o.OperationID
			}
		}
		return nil
	})
	hop := func(i int) time.Duration {
		id := "hop-" + strconv.Itoa(i)
		t0 := time.Now()
		if err := ap.Append(ctx, ta, &events.ExecutionSent{OperationID: id, Login: 1001}); err != nil {
			b.Fatal(err)
		}
		for {
			select {
			case got := <-arrived:
				if got == id {
					return time.Since(t0)
				}
			case <-time.After(30 * time.Second):
				b.Fatalf("hop %d never arrived", i)
			}
		}
	}
	hop(-1) // warm: group joins, metadata
	lat = lat[:0]
	for i := range 300 {
		lat = append(lat, hop(i))
	}
	cancel()
	wg.Wait()
	f.kafka2 = pct(lat, 50)

	// One Postgres commit with synchronous commit (the idempotency record's).
	if _, err := e.svc.PG.Exec(ctx, `CREATE TABLE IF NOT EXISTS public.bench_commit (id bigserial PRIMARY KEY, v text)`); err != nil {
		b.Fatal(err)
	}
	lat = lat[:0]
	for range 500 {
		t0 := time.Now()
		if _, err := e.svc.PG.Exec(ctx, `INSERT INTO public.bench_commit (v) VALUES ('x')`); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	f.pg = pct(lat, 50)
	return f
}

// BenchmarkE2EOrderResult: POST /v1/order MARKET with RESULT, open loop at 200 orders/s for
// 60 s, every answer FILLED; p50 and p99, and the ratio of p50 to the floor measured now.
func BenchmarkE2EOrderResult(b *testing.B) {
	e, hc := tradingBenchEnv(b)
	fl := measureFloor(b, e, hc)
	rate := benchInt("TRADESVC_BENCH_RESULT_RATE", 200)
	dur := benchSeconds(60)
	b.ResetTimer()
	var mu sync.Mutex
	var lat []time.Duration
	var bad atomic.Int64
	var firstBad atomic.Value
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	end := time.Now().Add(dur)
	for i := 0; time.Now().Before(end); i++ {
		<-tick.C
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			orderRequest(e, req, benchLogins[i%len(benchLogins)], fmt.Sprintf("br-%d-%d", b.N, i), "RESULT")
			t0 := time.Now()
			err := hc.Do(req, res)
			d := time.Since(t0)
			var m map[string]json.RawMessage
			if err == nil {
				_ = json.Unmarshal(res.Body(), &m)
			}
			if err != nil || res.StatusCode() != 200 || str(m, "status") != "FILLED" {
				if bad.Add(1) == 1 {
					firstBad.Store(fmt.Sprintf("%v %d %s", err, res.StatusCode(), res.Body()))
				}
				return
			}
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	if n := bad.Load(); n > 0 {
		b.Fatalf("%d orders not FILLED, first: %v", n, firstBad.Load())
	}
	p50 := pct(lat, 50)
	b.ReportMetric(float64(len(lat))/dur.Seconds(), "orders/s")
	b.ReportMetric(ms(p50), "p50_ms")
	b.ReportMetric(ms(pct(lat, 99)), "p99_ms")
	b.ReportMetric(ms(fl.https), "floor_https_ms")
	b.ReportMetric(ms(fl.kafka2), "floor_2kafka_ms")
	b.ReportMetric(ms(fl.pg), "floor_pg_ms")
	b.ReportMetric(ms(fl.total()), "floor_ms")
	b.ReportMetric(float64(p50)/float64(fl.total()), "p50/floor")
}

// BenchmarkE2EOrderAckThroughput: POST /v1/order MARKET with ACK, open loop at
// TRADESVC_BENCH_ACK_RATE (default 1000) orders/s for 30 s; every order must reach FILLED in
// the read model. Reports the accepted and filled rates and the p50/p99 lag from acceptance
// (the ACK's arrival) to FILLED (the commit of the projection transaction that filled it,
// rm.changes.created_at).
func BenchmarkE2EOrderAckThroughput(b *testing.B) {
	e, hc := tradingBenchEnv(b)
	rate := 1000
	if v, err := strconv.Atoi(os.Getenv("TRADESVC_BENCH_ACK_RATE")); err == nil && v > 0 {
		rate = v
	}
	dur := benchSeconds(30)
	prefix := "ba-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	accepted := make([]time.Time, 0, rate*int(dur.Seconds())+rate)
	var mu sync.Mutex
	acceptedAt := map[string]time.Time{}
	var bad atomic.Int64
	var firstBad atomic.Value
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	b.ResetTimer()
	start := time.Now()
	end := start.Add(dur)
	interval := time.Second / time.Duration(rate)
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(end) {
			break
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			req, res := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			defer fasthttp.ReleaseRequest(req)
			defer fasthttp.ReleaseResponse(res)
			coid := prefix + strconv.Itoa(i)
			orderRequest(e, req, benchLogins[i%len(benchLogins)], coid, "ACK")
			err := hc.Do(req, res)
			at := time.Now()
			if err != nil || res.StatusCode() != 200 {
				if bad.Add(1) == 1 {
					firstBad.Store(fmt.Sprintf("%v %d %s", err, res.StatusCode(), res.Body()))
				}
				return
			}
			mu.Lock()
			acceptedAt[coid] = at
			accepted = append(accepted, at)
			mu.Unlock()
		}()
	}
	wg.Wait()
	acceptEnd := time.Now()
	if n := bad.Load(); n > 0 {
		b.Fatalf("%d orders refused, first: %v", n, firstBad.Load())
	}
	// Every accepted order must reach FILLED; read when each did from the change feed.
	ctx := context.Background()
	filledAt := map[string]time.Time{}
	deadline := time.Now().Add(2 * time.Minute)
	for len(filledAt) < len(acceptedAt) && time.Now().Before(deadline) {
		rows, err := e.svc.PG.Query(ctx, `SELECT o.client_order_id, min(c.created_at) FROM rm.changes c
			JOIN rm.operations o ON o.operation_id = c.operation_id
			WHERE c.kind = 'OPERATION' AND c.event->>'status' = 'FILLED' AND o.client_order_id LIKE $1
			GROUP BY o.client_order_id`, prefix+"%")
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var coid string
			var at time.Time
			if err := rows.Scan(&coid, &at); err != nil {
				b.Fatal(err)
			}
			filledAt[coid] = at
		}
		rows.Close()
		if len(filledAt) < len(acceptedAt) {
			time.Sleep(500 * time.Millisecond)
		}
	}
	b.StopTimer()
	if len(filledAt) < len(acceptedAt) {
		b.Fatalf("%d of %d accepted orders never reached FILLED", len(acceptedAt)-len(filledAt), len(acceptedAt))
	}
	var lags []time.Duration
	var lastFill time.Time
	for coid, at := range acceptedAt {
		f := filledAt[coid]
		lags = append(lags, max(f.Sub(at), 0))
		if f.After(lastFill) {
			lastFill = f
		}
	}
	b.ReportMetric(float64(len(accepted))/acceptEnd.Sub(start).Seconds(), "accepted/s")
	b.ReportMetric(float64(len(filledAt))/lastFill.Sub(start).Seconds(), "filled/s")
	b.ReportMetric(ms(pct(lags, 50)), "lag_p50_ms")
	b.ReportMetric(ms(pct(lags, 99)), "lag_p99_ms")
}
