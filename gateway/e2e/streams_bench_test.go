package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// Stream benchmarks: the whole service in-process against the real servers, its WebSocket
// clients in the same process, all on one machine (so the figures are a floor for the
// service). Each runs once for TRADESVC_BENCH_SECONDS (default 20 s) whatever b.N is:
//
//	go test ./gateway/e2e/ -run '^$' -bench 'Stream' -benchtime 1x
//
// Floors (issue 8): 1,000 clients × 5 symbols at 1,000 ticks/s in total, p99 from the tick's
// creation on the simulator to its arrival at the client under 100 ms, no client dropped;
// p99 from a deal on the trade server to its DEAL event at a user-stream client under 50 ms.

func benchInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// latencyHist counts latencies in 100 µs buckets up to a minute; safe for concurrent use.
type latencyHist struct{ buckets [600_000]atomic.Int64 }

func (h *latencyHist) add(d time.Duration) {
	i := int(d / (100 * time.Microsecond))
	h.buckets[min(max(i, 0), len(h.buckets)-1)].Add(1)
}

// pct is the p-th percentile in milliseconds (the upper edge of its bucket), and the count.
func (h *latencyHist) pct(p float64) (float64, int64) {
	var n int64
	for i := range h.buckets {
		n += h.buckets[i].Load()
	}
	if n == 0 {
		return 0, 0
	}
	want := int64(float64(n)*p/100 + 0.5)
	var seen int64
	for i := range h.buckets {
		if seen += h.buckets[i].Load(); seen >= max(want, 1) {
			return float64(i+1) / 10, n
		}
	}
	return float64(len(h.buckets)) / 10, n
}

// tickTime reads T, the tick's creation time (Unix ms), from a combined @tick frame: the
// payload's last field, read backwards from the end without decoding the frame (the clients
// share the CPU with the service).
func tickTime(frame []byte) (int64, bool) {
	j := len(frame)
	for j > 0 && frame[j-1] == '}' {
		j--
	}
	i := j
	for i > 0 && frame[i-1] >= '0' && frame[i-1] <= '9' {
		i--
	}
	if i == j || i < 4 || string(frame[i-4:i]) != `"T":` {
		return 0, false
	}
	var t int64
	for _, c := range frame[i:j] {
		t = t*10 + int64(c-'0')
	}
	return t, true
}

// readFrame reads the next message into buf (grown as needed), without the allocation per
// message of ReadMessage: the clients share the CPU with the service.
func readFrame(c *websocket.Conn, buf []byte) ([]byte, error) {
	_, r, err := c.NextReader()
	if err != nil {
		return nil, err
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// BenchmarkE2EMarketStreams: TRADESVC_BENCH_STREAM_CLIENTS (default 1000) market-stream
// connections, each on the combined endpoint subscribed to the @tick streams of the same 5
// symbols, while the simulator publishes TRADESVC_BENCH_TICK_RATE (default 1000) ticks/s in
// total over those symbols (held, so the generator adds none). Every client receives every
// tick. Reports ticks published and frames delivered per second, the share of frames that
// arrived, p50/p99 from the tick's creation (T, set by the simulator) to its arrival, and
// the clients dropped (closed by the server: queue overflow).
func BenchmarkE2EMarketStreams(b *testing.B) {
	clients := benchInt("TRADESVC_BENCH_STREAM_CLIENTS", 1000)
	rate := benchInt("TRADESVC_BENCH_TICK_RATE", 1000)
	dur := benchSeconds(20)
	syms := []string{"BTCUSD", "ETHUSD", "LTCUSD", "XRPUSD", "BNBUSD"}
	e := startEnv(b, syms...)
	start := map[string]float64{"BTCUSD": 60000, "ETHUSD": 3000, "LTCUSD": 80, "XRPUSD": 0.5, "BNBUSD": 500}
	for _, s := range syms {
		d := e.digits[s]
		bid := strconv.FormatFloat(start[s], 'f', d, 64)
		ask := strconv.FormatFloat(start[s]*1.0005, 'f', d, 64)
		e.holdQuote(b, s, bid, ask)
	}
	path := "/stream?streams=" + strings.Join(syms, "@tick/") + "@tick"

	var hist latencyHist
	var frames, dropped atomic.Int64
	var stopping atomic.Bool
	conns := make([]*websocket.Conn, clients)
	var readers sync.WaitGroup
	// 20 connections per client address (the per-address cap): spread over 127.0.1.x.
	sem := make(chan struct{}, 32)
	var dialErr atomic.Value
	var dials sync.WaitGroup
	for i := range conns {
		sem <- struct{}{}
		dials.Add(1)
		go func() {
			defer dials.Done()
			defer func() { <-sem }()
			d := e.wsDialer(fmt.Sprintf("127.0.1.%d", 1+i/20), 0)
			c, _, err := d.Dial(e.wsURL(path), nil)
			if err != nil {
				dialErr.Store(err)
				return
			}
			// Ready once the subscriptions are in place (the reply follows them).
			_ = c.WriteMessage(websocket.TextMessage, []byte(`{"method":"LIST_SUBSCRIPTIONS","id":1}`))
			for {
				_, m, err := c.ReadMessage()
				if err != nil {
					dialErr.Store(err)
					return
				}
				if bytes.Contains(m, []byte(`"id":1`)) {
					break
				}
			}
			conns[i] = c
		}()
	}
	dials.Wait()
	if err := dialErr.Load(); err != nil {
		b.Fatalf("connecting %d clients: %v", clients, err)
	}
	last := make([]time.Time, len(conns)) // each client's last arrival
	for ci, c := range conns {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]byte, 0, 512)
			for {
				m, err := readFrame(c, buf)
				if err != nil {
					if !stopping.Load() {
						dropped.Add(1)
					}
					return
				}
				buf = m[:0]
				now := time.Now()
				if t, ok := tickTime(m); ok {
					hist.add(now.Sub(time.UnixMilli(t)))
					frames.Add(1)
					last[ci] = now
				}
			}
		}()
	}

	sim := e.svc.App.Sim()
	price := make([]float64, len(syms))
	for i, s := range syms {
		price[i] = start[s]
	}
	b.ResetTimer()
	t0 := time.Now()
	end := t0.Add(dur)
	interval := time.Second / time.Duration(rate)
	published := 0
	for i := 0; ; i++ {
		due := t0.Add(time.Duration(i) * interval)
		if !due.Before(end) {
			break
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		k := i % len(syms)
		price[k] *= 1 + (rand.Float64()-0.5)/5000
		d := e.digits[syms[k]]
		bid := dec.MustParse(strconv.FormatFloat(price[k], 'f', d, 64))
		ask := dec.MustParse(strconv.FormatFloat(price[k]*1.0005, 'f', d, 64))
		if err := sim.PushTick(syms[k], bid, ask); err != nil {
			b.Fatalf("push tick: %v", err)
		}
		published++
	}
	elapsed := time.Since(t0)
	// Let the last ticks arrive (until every frame is in or none came for a second), then
	// close the clients.
	want := int64(published) * int64(clients)
	for prev, drain := int64(-1), time.Now().Add(10*time.Second); time.Now().Before(drain); {
		n := frames.Load()
		if n >= want || n == prev {
			break
		}
		prev = n
		time.Sleep(time.Second)
	}
	b.StopTimer()
	stopping.Store(true)
	for _, c := range conns {
		c.Close()
	}
	readers.Wait()
	p50, _ := hist.pct(50)
	p99, _ := hist.pct(99)
	lastArrival := t0
	for _, at := range last {
		if at.After(lastArrival) {
			lastArrival = at
		}
	}
	b.ReportMetric(float64(published)/elapsed.Seconds(), "ticks/s")
	b.ReportMetric(float64(frames.Load())/lastArrival.Sub(t0).Seconds(), "frames/s")
	b.ReportMetric(float64(frames.Load())/float64(max(want, 1)), "delivered")
	b.ReportMetric(p50, "p50_ms")
	b.ReportMetric(p99, "p99_ms")
	b.ReportMetric(float64(dropped.Load()), "clients_dropped")
	b.ReportMetric(float64(clients), "clients")
}

// BenchmarkE2EUserStreamDeal: market orders sent straight to the trade server (the
// simulator's port, as the executor does) at TRADESVC_BENCH_DEAL_RATE (default 50) deals/s,
// spread over four accounts; one user stream of a key over them. Reports p50/p99 from the
// deal being recorded on the trade server (Send returned) to its DEAL event at the client:
// the relay, Kafka, the trading projection's commit, the change feed and the socket.
func BenchmarkE2EUserStreamDeal(b *testing.B) {
	rate := benchInt("TRADESVC_BENCH_DEAL_RATE", 50)
	dur := benchSeconds(20)
	e := startEnv(b, "BTCUSD")
	for _, l := range benchLogins {
		if _, err := e.svc.App.Sim().Deposit(l, dec.MustParse("100000000")); err != nil {
			b.Fatal(err)
		}
	}
	e.holdQuote(b, "BTCUSD", "60000.00", "60015.00")
	c, _ := e.userStream(b, e.unlimitedKey(b))

	var mu sync.Mutex
	arrived := map[int64]time.Time{}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			_, m, err := c.ws.ReadMessage()
			if err != nil {
				return
			}
			at := time.Now()
			var ev struct {
				E    string `json:"e"`
				Time int64  `json:"E"` // declared so that "E" does not fold onto "e"
				D    int64  `json:"d"`
			}
			if json.Unmarshal(m, &ev) == nil && ev.E == "DEAL" {
				mu.Lock()
				arrived[ev.D] = at
				mu.Unlock()
			}
		}
	}()

	sim := e.svc.App.Sim()
	ctx := context.Background()
	recorded := map[int64]time.Time{}
	b.ResetTimer()
	t0 := time.Now()
	end := t0.Add(dur)
	interval := time.Second / time.Duration(rate)
	for i := 0; ; i++ {
		due := t0.Add(time.Duration(i) * interval)
		if !due.Before(end) {
			break
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		res, err := sim.Send(ctx, mt5.TradeRequest{Login: benchLogins[i%len(benchLogins)], Action: mt5.ActionDeal,
			Symbol: "BTCUSD", Type: trading.OrderBuy, Volume: dec.MustParse("0.01")})
		at := time.Now()
		if err != nil || res.Retcode != trading.RetDone {
			b.Fatalf("send: %v %v", err, res.Retcode)
		}
		for _, d := range res.Deals {
			recorded[d] = at
		}
	}
	elapsed := time.Since(t0)
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := len(arrived)
		mu.Unlock()
		if n >= len(recorded) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.StopTimer()
	c.ws.Close()
	<-readDone
	var hist latencyHist
	missing := 0
	for d, at := range recorded {
		got, ok := arrived[d]
		if !ok {
			missing++
			continue
		}
		hist.add(got.Sub(at))
	}
	if missing > 0 {
		b.Fatalf("%d of %d deals never reached the user stream", missing, len(recorded))
	}
	p50, _ := hist.pct(50)
	p99, _ := hist.pct(99)
	b.ReportMetric(float64(len(recorded))/elapsed.Seconds(), "deals/s")
	b.ReportMetric(p50, "p50_ms")
	b.ReportMetric(p99, "p99_ms")
}
