package streams

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/perkey"
	"tradesvc/query"
)

// SymbolLookup is the symbol read model stream names are checked against (exact,
// case-sensitive names); it also gives each symbol's digits.
type SymbolLookup interface {
	Symbol(ctx context.Context, name string) (trading.SymbolSpec, bool, error)
}

// Topic slots of one symbol: the fixed kinds, then one kline stream per interval.
const (
	topicTick = iota
	topicBookTicker
	topicTicker
	topicDepth
	topicKline0
	topicCount = topicKline0 + len(KlineIntervals)
)

func topicIndex(n Name) int {
	switch n.Kind {
	case KindTick:
		return topicTick
	case KindBookTicker:
		return topicBookTicker
	case KindTicker:
		return topicTicker
	case KindDepth:
		return topicDepth
	default:
		return topicKline0 + n.Interval
	}
}

// Market fans the in-memory market projection out to market-stream connections. The
// projection calls TickApplied and DayStatsApplied after applying each update; they encode a
// payload once per stream that has subscribers and enqueue it on each subscriber without
// blocking, and never do I/O: the projection's goroutine is never held up by a client.
type Market struct {
	cfg     *Config
	symbols SymbolLookup
	depth   map[string]bool

	bySym perkey.Map[string, symbolStreams]

	subMu sync.Mutex // serialises subscription changes (topics are copy-on-write)
}

// symbolStreams holds one symbol's kline bars and its topics.
type symbolStreams struct {
	// digits formats prices; -1 until the symbol was looked up (a subscription always looks
	// it up first, so frames for subscribers always have the right precision).
	digits atomic.Int32

	klMu sync.Mutex
	kl   klines

	topics [topicCount]topic
}

// topic is one stream name and its subscribers (replaced, never modified, on a change).
type topic struct {
	name string
	subs atomic.Pointer[[]*marketConn]
}

func newMarket(cfg *Config, symbols SymbolLookup) *Market {
	m := &Market{cfg: cfg, symbols: symbols, depth: make(map[string]bool)}
	for _, s := range cfg.DepthSymbols {
		m.depth[s] = true
	}
	return m
}

// streams returns the state of symbol, creating it on first use.
func (m *Market) streams(symbol string) *symbolStreams {
	return m.bySym.Ensure(symbol, func() *symbolStreams { return newSymbolStreams(symbol) })
}

// newSymbolStreams is the state of a symbol no stream has used yet: digits unknown, each
// topic named.
func newSymbolStreams(symbol string) *symbolStreams {
	st := &symbolStreams{}
	st.digits.Store(-1)
	for i := range st.topics {
		n := Name{Symbol: symbol}
		switch i {
		case topicTick:
			n.Kind = KindTick
		case topicBookTicker:
			n.Kind = KindBookTicker
		case topicTicker:
			n.Kind = KindTicker
		case topicDepth:
			n.Kind = KindDepth
		default:
			n.Kind, n.Interval = KindKline, i-topicKline0
		}
		st.topics[i].name = n.String()
	}
	return st
}

// TickApplied publishes one tick the projection applied: @tick, @bookTicker, @depth (when
// enabled for the symbol) and the @kline_<interval> bars it changed. Kline bars are kept for
// every symbol, subscribed or not, so a subscriber always gets the whole current bar.
func (m *Market) TickApplied(q query.Quote) {
	st := m.streams(q.Symbol)
	now := m.cfg.Clock().UnixMilli()
	d := st.digits.Load()
	publish(&st.topics[topicTick], func() []byte { return encodeTick(&q, d, now) })
	publish(&st.topics[topicBookTicker], func() []byte { return encodeBookTicker(&q, d, now) })
	if m.depth[q.Symbol] {
		publish(&st.topics[topicDepth], func() []byte { return encodeDepth(&q, d, now) })
	}
	st.klMu.Lock()
	defer st.klMu.Unlock()
	st.kl.apply(q.Time, q.Seq, &q.Bid, func(iv int, b *bar, closed bool) {
		publish(&st.topics[topicKline0+iv], func() []byte { return encodeKline(q.Symbol, iv, b, closed, d, now) })
	})
}

// SeedKlines resumes the kline streams from the stored bars (GET /v1/klines's source), so
// that after a gateway starts each interval's current bar is the one REST has, not a bar
// begun at the first tick this process saw. Call it before the tick tail runs: a symbol that
// already folded a tick keeps its bars. It reports how many symbols were seeded.
func (m *Market) SeedKlines(ctx context.Context, h query.BarHistory) (int, error) {
	days, err := h.LatestDayBars(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range days {
		st := m.streams(d.Symbol)
		st.klMu.Lock()
		if st.kl.seed(d.Seq, d.Bars) {
			n++
		}
		st.klMu.Unlock()
	}
	return n, nil
}

// DayStatsApplied publishes new trading-day statistics on @ticker.
func (m *Market) DayStatsApplied(s query.DayStats) {
	st := m.streams(s.Symbol)
	d := st.digits.Load()
	now := m.cfg.Clock().UnixMilli()
	publish(&st.topics[topicTicker], func() []byte { return encodeTicker(&s, d, now) })
}

// publish encodes and frames a payload only when the topic has subscribers (once, and once
// more wrapped for the combined form if a subscriber needs it) and enqueues the same frame
// bytes on every subscriber.
func publish(t *topic, encode func() []byte) {
	subs := t.subs.Load()
	if subs == nil || len(*subs) == 0 {
		return
	}
	payload := encode()
	var raw, wrapped []byte
	for _, c := range *subs {
		var f []byte
		if c.combined {
			if wrapped == nil {
				wrapped = textFrame(wrapCombined(t.name, payload))
			}
			f = wrapped
		} else {
			if raw == nil {
				raw = textFrame(payload)
			}
			f = raw
		}
		c.enqueueFrame(f)
	}
}

// resolve checks stream names (syntax, then the symbol's existence in exact case) and
// returns them without duplicates; the first invalid name is the error (-1121 / -1120).
func (m *Market) resolve(ctx context.Context, names []string) ([]Name, error) {
	out := make([]Name, 0, len(names))
	seen := make(map[Name]bool, len(names))
	for _, s := range names {
		n, err := ParseName(s)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			continue
		}
		seen[n] = true
		spec, ok, err := m.symbols.Symbol(ctx, n.Symbol)
		if err != nil {
			return nil, fmt.Errorf("look up symbol %q: %w", n.Symbol, err)
		}
		if !ok || spec.Symbol != n.Symbol {
			return nil, events.Reject(events.CodeInvalidSymbol, "Invalid symbol in stream name "+s+".")
		}
		m.streams(n.Symbol).digits.Store(spec.Digits)
		out = append(out, n)
	}
	return out, nil
}

// subscribe adds c to the topics of names.
func (m *Market) subscribe(c *marketConn, names []Name) {
	m.subMu.Lock()
	defer m.subMu.Unlock()
	for _, n := range names {
		t := &m.streams(n.Symbol).topics[topicIndex(n)]
		var next []*marketConn
		if old := t.subs.Load(); old != nil {
			next = make([]*marketConn, 0, len(*old)+1)
			next = append(next, *old...)
		}
		next = append(next, c)
		t.subs.Store(&next)
	}
}

// unsubscribe removes c from the topics of names.
func (m *Market) unsubscribe(c *marketConn, names []Name) {
	m.subMu.Lock()
	defer m.subMu.Unlock()
	for _, n := range names {
		t := &m.streams(n.Symbol).topics[topicIndex(n)]
		old := t.subs.Load()
		if old == nil {
			continue
		}
		next := make([]*marketConn, 0, len(*old))
		for _, x := range *old {
			if x != c {
				next = append(next, x)
			}
		}
		t.subs.Store(&next)
	}
}

// refreshDigits re-reads the digits of every symbol that has been looked up, so a changed
// specification reaches the frames within SymbolRefresh.
func (m *Market) refreshDigits(ctx context.Context) {
	names := make([]string, 0, m.bySym.Len())
	m.bySym.Range(func(name string, st *symbolStreams) {
		if st.digits.Load() >= 0 {
			names = append(names, name)
		}
	})
	for _, name := range names {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		spec, ok, err := m.symbols.Symbol(lctx, name)
		cancel()
		if err == nil && ok {
			m.streams(name).digits.Store(spec.Digits)
		}
	}
}
