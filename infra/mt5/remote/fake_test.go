package remote

import (
	"context"
	"sync"

	"tradesvc/infra/mt5"
)

// fakePort is a scripted mt5.TradeServer for wire tests that need behaviour the simulator
// cannot be made to show on demand (arbitrary errors, blocking sends, exotic decimals).
type fakePort struct {
	mu      sync.Mutex
	sendFn  func(ctx context.Context, req mt5.TradeRequest) (mt5.TradeResult, error)
	errFor  error // returned by every read call when set
	facts   []mt5.Fact
	changed chan struct{} // closed and replaced when facts grow
	polls   int
}

func newFakePort() *fakePort { return &fakePort{changed: make(chan struct{})} }

func (f *fakePort) addFact(fc mt5.Fact) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fc.Seq = uint64(len(f.facts) + 1)
	f.facts = append(f.facts, fc)
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakePort) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errFor = err
}

func (f *fakePort) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.errFor
}

func (f *fakePort) pollCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls
}

func (f *fakePort) Send(ctx context.Context, req mt5.TradeRequest) (mt5.TradeResult, error) {
	f.mu.Lock()
	fn := f.sendFn
	f.mu.Unlock()
	return fn(ctx, req)
}

func (f *fakePort) OrdersByTag(ctx context.Context, login int64, tag string) ([]mt5.Order, error) {
	return nil, f.err()
}

func (f *fakePort) DealsByTag(ctx context.Context, login int64, tag string) ([]mt5.Deal, error) {
	return nil, f.err()
}

func (f *fakePort) Facts(ctx context.Context, after uint64, max int) ([]mt5.Fact, error) {
	f.mu.Lock()
	f.polls++
	f.mu.Unlock()
	for {
		f.mu.Lock()
		if f.errFor != nil {
			f.mu.Unlock()
			return nil, f.err()
		}
		if int(after) < len(f.facts) {
			out := append([]mt5.Fact(nil), f.facts[after:min(len(f.facts), int(after)+max)]...)
			f.mu.Unlock()
			return out, nil
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (f *fakePort) Ticks(ctx context.Context, after uint64, max int) ([]mt5.Tick, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (f *fakePort) ServerInfo(ctx context.Context) (mt5.ServerInfo, error) {
	return mt5.ServerInfo{Name: "fake"}, f.err()
}
func (f *fakePort) Symbols(ctx context.Context) ([]mt5.Symbol, error)   { return nil, f.err() }
func (f *fakePort) Groups(ctx context.Context) ([]mt5.Group, error)     { return nil, f.err() }
func (f *fakePort) Accounts(ctx context.Context) ([]mt5.Account, error) { return nil, f.err() }
func (f *fakePort) Account(ctx context.Context, login int64) (mt5.Account, error) {
	return mt5.Account{Login: login}, f.err()
}
func (f *fakePort) OpenOrders(ctx context.Context, login int64) ([]mt5.Order, error) {
	return nil, f.err()
}
func (f *fakePort) Positions(ctx context.Context, login int64) ([]mt5.Position, error) {
	return nil, f.err()
}
func (f *fakePort) OrderHistory(ctx context.Context, login int64, from, to int64) ([]mt5.Order, error) {
	return nil, f.err()
}
func (f *fakePort) DealHistory(ctx context.Context, login int64, from, to int64) ([]mt5.Deal, error) {
	return nil, f.err()
}
func (f *fakePort) DayStats(ctx context.Context, symbol string) (mt5.DayStats, error) {
	return mt5.DayStats{Symbol: symbol}, f.err()
}
func (f *fakePort) Quote(ctx context.Context, symbol string) (mt5.Tick, error) {
	return mt5.Tick{Symbol: symbol}, f.err()
}
