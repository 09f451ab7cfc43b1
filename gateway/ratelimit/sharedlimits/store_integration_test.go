package sharedlimits_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/gateway/ratelimit"
	"tradesvc/gateway/ratelimit/sharedlimits"
	"tradesvc/infra/postgres"
	"tradesvc/infra/testenv"
)

var t0 = time.UnixMilli(1_800_000_000_000).Truncate(time.Minute).UnixMilli()

// gateways returns n stores on one database: n gateways sharing their keys' limits, each
// with its own pool (its own connections) and its own cache.
func gateways(t testing.TB, n int) []*sharedlimits.Store {
	t.Helper()
	url := testenv.PGDatabase(t)
	out := make([]*sharedlimits.Store, n)
	for i := range out {
		pool, err := postgres.Open(context.Background(), postgres.Config{URL: url, MaxConns: 8})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		if i == 0 {
			if err := postgres.Migrate(context.Background(), pool); err != nil {
				t.Fatal(err)
			}
		}
		if out[i], err = sharedlimits.New(pool, ratelimit.DefaultPolicy()); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// The shared store is the rule of ratelimit.State.Apply kept in Postgres: a random run of
// charges (reads and orders, bursts past every bucket, 429s, bans and their lengthening,
// windows rolling), sent alternately through two gateways, is decided charge for charge as
// one gateway's Memory decides it.
func TestTwoGatewaysDecideEveryChargeAsOneMemoryDoes(t *testing.T) {
	ctx := context.Background()
	gws := gateways(t, 2)
	mem := ratelimit.NewMemory(ratelimit.DefaultPolicy())
	rng := rand.New(rand.NewPCG(17, 42))
	lim := ratelimit.Limits{WeightPerMinute: 12, Orders10s: 3, Orders1m: 6}
	now := t0
	outcomes := map[ratelimit.Outcome]int{}
	for i := range 600 {
		key := []string{"k1", "k2", "k3"}[rng.IntN(3)]
		c := ratelimit.Charge{Limits: lim, Now: now, Weight: rng.IntN(3)}
		if rng.IntN(3) == 0 {
			c.Weight, c.Orders = 0, 1+rng.IntN(2)
		}
		gw := gws[rng.IntN(2)]
		wantD, wantU, _ := mem.Charge(ctx, key, c)
		d, u, err := gw.Charge(ctx, key, c)
		if err != nil {
			t.Fatalf("charge %d: %v", i, err)
		}
		if d != wantD || u != wantU {
			t.Fatalf("charge %d (%s %+v): shared %+v %+v, memory %+v %+v", i, key, c, d, u, wantD, wantU)
		}
		outcomes[d.Outcome]++
		// Mostly within a window, sometimes across one, sometimes past a ban.
		switch r := rng.IntN(100); {
		case r < 80:
			now += int64(rng.IntN(400))
		case r < 97:
			now += int64(rng.IntN(15_000))
		default:
			now += int64(rng.IntN(3 * 60_000))
		}
	}
	for _, o := range []ratelimit.Outcome{ratelimit.Allowed, ratelimit.WeightExceeded, ratelimit.OrdersExceeded, ratelimit.Banned} {
		if outcomes[o] == 0 {
			t.Errorf("the run never produced outcome %d (%v): it must exercise every one", o, outcomes)
		}
	}
	for _, key := range []string{"k1", "k2", "k3"} {
		want, _ := mem.Usage(ctx, key, now)
		for i, gw := range gws {
			if got, err := gw.Usage(ctx, key, now); err != nil || got != want {
				t.Errorf("gateway %d usage of %s: %+v %v, want %+v", i, key, got, err, want)
			}
		}
	}
}

// Many requests of one key race through two gateways at once: exactly the key's limit is
// allowed, never twice it; the 429 earned on one gateway is a 418 on the other.
func TestConcurrentChargesThroughTwoGatewaysAllowExactlyTheLimit(t *testing.T) {
	ctx := context.Background()
	gws := gateways(t, 2)
	const limit = 150
	lim := ratelimit.Limits{WeightPerMinute: limit, Orders10s: 100, Orders1m: 100}
	var allowed, refused atomic.Int32
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 40 {
				d, _, err := gws[g%2].Charge(ctx, "hot", ratelimit.Charge{Limits: lim, Now: t0 + 1000, Weight: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Outcome == ratelimit.Allowed {
					allowed.Add(1)
				} else {
					refused.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != limit || refused.Load() != 8*40-limit {
		t.Fatalf("allowed %d refused %d of %d, want exactly %d allowed", allowed.Load(), refused.Load(), 8*40, limit)
	}
	// The key went past its weight: a 429 set the throttle, and every later charge is a ban.
	d, _, err := gws[0].Charge(ctx, "hot", ratelimit.Charge{Limits: lim, Now: t0 + 2000, Weight: 1})
	if err != nil || d.Outcome != ratelimit.Banned {
		t.Fatalf("after the burst on gateway 1: %+v %v, want 418", d, err)
	}
	d, _, err = gws[1].Charge(ctx, "hot", ratelimit.Charge{Limits: lim, Now: t0 + 3000, Weight: 1})
	if err != nil || d.Outcome != ratelimit.Banned || d.RetryAfter != 2*time.Minute {
		t.Fatalf("on gateway 2 during the ban: %+v %v, want 418 restarted at 2m", d, err)
	}
}

// A gateway whose database is gone decides nothing and charges nothing: an error, which the
// gateway answers -1000 (503).
func TestUnreachableStoreChargesNothing(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s, err := sharedlimits.New(pool, ratelimit.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, _, err := s.Charge(ctx, "k", ratelimit.Charge{Limits: ratelimit.DefaultLimits(), Now: t0, Weight: 1}); err == nil {
		t.Fatal("charged without a database")
	}
	if _, err := s.Usage(ctx, "k", t0); err == nil {
		t.Fatal("usage without a database")
	}
}

// The cost of a charge: one statement while a key stays on one gateway, two when its
// requests alternate between gateways.
func BenchmarkCharge(b *testing.B) {
	ctx := context.Background()
	gws := gateways(b, 2)
	lim := ratelimit.Limits{WeightPerMinute: 1 << 30, Orders10s: 1 << 30, Orders1m: 1 << 30}
	b.Run("one gateway", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, _, err := gws[0].Charge(ctx, "one", ratelimit.Charge{Limits: lim, Now: t0, Weight: 1}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("alternating", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, _, err := gws[i%2].Charge(ctx, "alt", ratelimit.Charge{Limits: lim, Now: t0, Weight: 1}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
