package projections

import (
	"sort"
	"sync"
	"sync/atomic"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/perkey"
	"tradesvc/query"
)

// TickBufferSize is how many recent ticks per symbol GET /v1/ticks can return.
const TickBufferSize = 1000

// Market is the in-memory market projection fed from the tick topic: the latest quote and
// day statistics of every symbol, and a buffer of the ticks received since this process
// started (GET /v1/ticks has no archive). Reads are lock-free for the latest quote, which
// is on the hot path of every ticker request.
type Market struct {
	startedAt int64

	symbols perkey.Map[string, marketSymbol]

	listener atomic.Pointer[marketListener]
}

// marketListener is told of each applied update (OnApplied).
type marketListener struct {
	tick  func(query.Quote)
	stats func(query.DayStats)
}

// OnApplied registers functions called after each new tick and each day-statistics update
// is applied (the gateway's market streams fan them out). They run on the tail's goroutine,
// in order per symbol, and must not block.
func (m *Market) OnApplied(tick func(query.Quote), stats func(query.DayStats)) {
	m.listener.Store(&marketListener{tick: tick, stats: stats})
}

type marketSymbol struct {
	latest atomic.Pointer[query.Quote]
	stats  atomic.Pointer[query.DayStats]

	mu      sync.Mutex
	lastSeq uint64
	ring    []query.Quote
	next    int
	full    bool
}

// NewMarket builds an empty projection; ticks older than startedAtMs warm the latest quote
// but do not enter the tick buffer.
func NewMarket(startedAtMs int64) *Market {
	return &Market{startedAt: startedAtMs}
}

func (m *Market) symbol(name string) *marketSymbol {
	return m.symbols.Ensure(name, func() *marketSymbol { return &marketSymbol{ring: make([]query.Quote, TickBufferSize)} })
}

// Handle applies one message of the tick topic.
func (m *Market) Handle(msg batch.Message) {
	switch e := msg.Event.(type) {
	case *events.TickReceived:
		if q, ok := m.applyTick(e); ok {
			if l := m.listener.Load(); l != nil {
				l.tick(q)
			}
		}
	case *events.DayStatsUpdated:
		st := dayStatsFromEvent(e)
		s := m.symbol(e.Symbol)
		if old := s.stats.Load(); old != nil && old.Time > st.Time {
			return
		}
		s.stats.Store(&st)
		if l := m.listener.Load(); l != nil {
			l.stats(st)
		}
	}
}

// applyTick stores the tick unless it was seen before (redelivery, backfill overlap).
func (m *Market) applyTick(e *events.TickReceived) (query.Quote, bool) {
	s := m.symbol(e.Symbol)
	q := query.Quote{Symbol: e.Symbol, Bid: e.Bid, Ask: e.Ask, Last: e.Last, Volume: e.Volume,
		BidDirection: int32(e.BidDirection), AskDirection: int32(e.AskDirection), Time: e.Time, Held: e.Held, Seq: e.Seq}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Seq != 0 && e.Seq <= s.lastSeq {
		return q, false
	}
	s.lastSeq = e.Seq
	s.latest.Store(&q)
	if e.Time >= m.startedAt {
		s.ring[s.next] = q
		s.next = (s.next + 1) % len(s.ring)
		if s.next == 0 {
			s.full = true
		}
	}
	return q, true
}

// Quote implements query.QuoteReader.
func (m *Market) Quote(symbol string) (query.Quote, bool) { return latestOf(m, symbol, quoteOf) }

// Quotes implements query.QuoteReader, ordered by symbol.
func (m *Market) Quotes() []query.Quote {
	return everyLatest(m, quoteOf, func(q *query.Quote) string { return q.Symbol })
}

func quoteOf(s *marketSymbol) *atomic.Pointer[query.Quote] { return &s.latest }

func statsOf(s *marketSymbol) *atomic.Pointer[query.DayStats] { return &s.stats }

// latestOf reads the latest value of one kind (the quote, the day statistics) of a symbol:
// the lock only finds the symbol, the value is an atomic pointer that writers swap whole.
func latestOf[T any](m *Market, symbol string, kind func(*marketSymbol) *atomic.Pointer[T]) (T, bool) {
	s := m.symbols.Get(symbol)
	var v *T
	if s != nil {
		v = kind(s).Load()
	}
	if v == nil {
		var zero T
		return zero, false
	}
	return *v, true
}

// everyLatest returns that value of every symbol that has one, ordered by symbol.
func everyLatest[T any](m *Market, kind func(*marketSymbol) *atomic.Pointer[T], symbolOf func(*T) string) []T {
	out := make([]T, 0, m.symbols.Len())
	m.symbols.Range(func(_ string, s *marketSymbol) {
		if v := kind(s).Load(); v != nil {
			out = append(out, *v)
		}
	})
	sort.Slice(out, func(i, j int) bool { return symbolOf(&out[i]) < symbolOf(&out[j]) })
	return out
}

// Ticks implements query.QuoteReader: up to limit of the newest buffered ticks, oldest first.
func (m *Market) Ticks(symbol string, limit int) []query.Quote {
	s := m.symbols.Get(symbol)
	if s == nil || limit <= 0 {
		return []query.Quote{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.next
	if s.full {
		n = len(s.ring)
	}
	limit = min(limit, n)
	out := make([]query.Quote, 0, limit)
	for i := limit; i > 0; i-- {
		out = append(out, s.ring[(s.next-i+len(s.ring))%len(s.ring)])
	}
	return out
}

// DayStats implements query.DayStatsReader.
func (m *Market) DayStats(symbol string) (query.DayStats, bool) { return latestOf(m, symbol, statsOf) }

// AllDayStats implements query.DayStatsReader, ordered by symbol.
func (m *Market) AllDayStats() []query.DayStats {
	return everyLatest(m, statsOf, func(st *query.DayStats) string { return st.Symbol })
}

func dayStatsFromEvent(e *events.DayStatsUpdated) query.DayStats {
	return query.DayStats{Symbol: e.Symbol, Open: e.OpenPrice, High: e.HighPrice, Low: e.LowPrice,
		Last: e.LastPrice, Bid: e.BidPrice, Ask: e.AskPrice, BidHigh: e.BidHigh, BidLow: e.BidLow,
		AskHigh: e.AskHigh, AskLow: e.AskLow, PriceChange: e.PriceChange,
		PriceChangePercent: e.PriceChangePercent, Volatility: e.Volatility, TradeDeals: e.TradeDeals,
		Volume: e.Volume, BuyOrders: e.BuyOrders, SellOrders: e.SellOrders, Time: e.Time}
}
