package sim

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/infra/mt5"
)

// BenchmarkSimMarketOrders measures market orders per second through Send with parallel
// callers and the journal fsyncing every group commit. Each caller alternates an open and
// the close of the position it opened, so state stays bounded; both count as orders.
func BenchmarkSimMarketOrders(b *testing.B) {
	s, err := Open(Config{DataDir: b.TempDir(), Sync: SyncBatch})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	logins := []int64{1001, 1002, 1003, 1006}
	var n atomic.Int64
	vol := dec.MustParse("0.01")
	b.SetParallelism(128)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		login := logins[n.Add(1)%int64(len(logins))]
		if login == 1006 { // the no-hedge FIFO group caps positions; use a hedging login
			login = 1002
		}
		var pos int64
		for pb.Next() {
			req := mt5.TradeRequest{Login: login, Action: mt5.ActionDeal, Symbol: "BTCUSD", Type: trading.OrderBuy, Volume: vol, Comment: "bench  ABCDEFG"}
			if pos != 0 {
				req.Position, req.Type = pos, trading.OrderSell
			}
			r, err := s.Send(ctx, req)
			if err != nil || r.Retcode != trading.RetDone {
				b.Errorf("send: %v %v", r.Retcode, err)
				return
			}
			if pos != 0 {
				pos = 0
			} else {
				pos = r.Position
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "orders/s")
}

// BenchmarkSimTicksWith10kPending measures ticks processed per second with 10,000 pending
// orders resting across symbols (none of which the ticks reach, so every tick pays the
// trigger lookup but not an execution).
func BenchmarkSimTicksWith10kPending(b *testing.B) {
	s, err := Open(Config{DataDir: b.TempDir(), Sync: SyncBatch})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	syms := []struct {
		name     string
		bid, ask string
		buyLimit string // far below
		sellStop string
	}{
		{"BTCUSD", "60000.00", "60015.00", "30000.00", "20000.00"},
		{"ETHUSD", "3000.00", "3002.00", "1500.00", "1000.00"},
		{"LTCUSD", "80.00", "80.10", "40.00", "30.00"},
		{"BNBUSD", "550.00", "550.50", "300.00", "200.00"},
	}
	ctx := context.Background()
	// lift the per-group order cap by placing on hedging logins only
	logins := []int64{1001, 1002, 1003}
	// placed by 100 concurrent callers so that the fsyncs are shared
	var wg sync.WaitGroup
	var failed atomic.Int64
	for w := 0; w < 100; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < 10000; i += 100 {
				y := syms[i%len(syms)]
				t, price := trading.OrderBuyLimit, y.buyLimit
				if i%2 == 1 {
					t, price = trading.OrderSellStop, y.sellStop
				}
				r, err := s.Send(ctx, mt5.TradeRequest{Login: logins[i%3], Action: mt5.ActionPending, Symbol: y.name, Type: t,
					Volume: dec.MustParse("0.01"), Price: dec.MustParse(price)})
				if err != nil || r.Retcode != trading.RetPlaced {
					failed.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	if failed.Load() != 0 {
		b.Fatalf("%d placements failed", failed.Load())
	}
	alt := make([][2]decPair, len(syms))
	for i, y := range syms {
		yy := s.symbols[y.name]
		alt[i][0] = decPair{dec.MustParse(y.bid), dec.MustParse(y.ask)}
		alt[i][1] = decPair{addPoints(yy, dec.MustParse(y.bid), 100), addPoints(yy, dec.MustParse(y.ask), 100)}
	}
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		k := i % len(syms)
		p := alt[k][(i/len(syms))%2]
		if err := s.PushTick(syms[k].name, p.bid, p.ask); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ticks/s")
}

type decPair struct{ bid, ask apd.Decimal }
