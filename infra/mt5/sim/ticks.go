package sim

import (
	"context"
	"sync"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/infra/mt5"
	"tradesvc/infra/wait"
)

// tickRing keeps the newest ticks for the tick feed. Ticks are market data, not trade
// state: they are not journaled, and a cursor older than the ring resumes at its oldest.
type tickRing struct {
	mu    sync.Mutex
	buf   []mt5.Tick
	last  uint64 // seq of the newest tick
	first uint64 // seq of the first tick since open
	wake  chan struct{}
}

// newTickRing starts the sequence at base so that it keeps increasing across restarts.
func newTickRing(n int, base uint64) *tickRing {
	return &tickRing{buf: make([]mt5.Tick, n), last: base, first: base + 1}
}

func (r *tickRing) append(t mt5.Tick) uint64 {
	r.mu.Lock()
	r.last++
	t.Seq = r.last
	r.buf[t.Seq%uint64(len(r.buf))] = t
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
	r.mu.Unlock()
	return t.Seq
}

func (r *tickRing) read(ctx context.Context, after uint64, max int) ([]mt5.Tick, error) {
	if max <= 0 {
		max = 1000
	}
	for {
		r.mu.Lock()
		if after > r.last {
			after = 0 // a cursor from before a restart that reset the feed: start over
		}
		if r.last >= r.first && r.last > after {
			oldest := r.first
			if r.last-r.first+1 > uint64(len(r.buf)) {
				oldest = r.last - uint64(len(r.buf)) + 1
			}
			from := max64(after+1, oldest)
			out := make([]mt5.Tick, 0, min(max, int(r.last-from+1)))
			for s := from; s <= r.last && len(out) < max; s++ {
				out = append(out, r.buf[s%uint64(len(r.buf))])
			}
			r.mu.Unlock()
			return out, nil
		}
		if r.wake == nil {
			r.wake = make(chan struct{})
		}
		ch := r.wake
		r.mu.Unlock()
		if err := wait.Until(ctx, ch); err != nil {
			return nil, err
		}
	}
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// inSession reports whether y trades at ms.
func (s *Sim) inSession(y *symbol, ms int64) bool {
	local := ms + int64(s.server.TimeZoneOffsetMinutes)*60000
	day := s.serverDay(ms)
	minute := int((local - day*86400000) / 60000)
	for _, w := range y.spec.Sessions[weekdayOfDay(day)] {
		if minute >= w.Open && minute < w.Close {
			return true
		}
	}
	return false
}

func dir(newK, oldK int64, prev int) int {
	switch {
	case newK > oldK:
		return 1
	case newK < oldK:
		return -1
	case prev == 0:
		return 1
	}
	return prev
}

// applyTickLocked makes (bid, ask) the symbol's quote, updates the day statistics,
// publishes the tick and, when process is set, fires pending orders, SL/TP and stop-outs.
func (s *Sim) applyTickLocked(y *symbol, bid, ask apd.Decimal, volume int64, process bool) {
	bk, _ := toPoints(y, bid)
	ak, _ := toPoints(y, ask)
	now := s.nowMs()
	t := mt5.Tick{Symbol: y.spec.Name, Bid: bid, Ask: ask, Last: bid, Volume: volume, Time: now, Held: y.held}
	var prevBD, prevAD int
	if y.hasQuote {
		prevBD, prevAD = y.lastDirs()
	}
	t.BidDirection = dir(bk, y.bidK, prevBD)
	t.AskDirection = dir(ak, y.askK, prevAD)
	if !y.hasQuote {
		t.BidDirection, t.AskDirection = 1, 1
	}
	y.bid, y.ask, y.bidK, y.askK, y.hasQuote, y.tickTime = bid, ask, bk, ak, true, now
	y.bidDir, y.askDir = t.BidDirection, t.AskDirection
	s.updateDay(y, now)
	y.lastSeq = s.ticks.append(t)
	if process {
		s.checkTriggers(y)
		if len(y.holders) > 0 {
			s.checkStopOuts(y)
		}
	}
}

func (y *symbol) lastDirs() (int, int) { return y.bidDir, y.askDir }

func (s *Sim) updateDay(y *symbol, now int64) {
	d := s.serverDay(now)
	st := &y.day
	if st.day != d || st.open.IsZero() {
		*st = dayStats{day: d, open: y.bid, high: y.bid, low: y.bid, bidHigh: y.bid, bidLow: y.bid, askHigh: y.ask, askLow: y.ask}
		return
	}
	if y.bid.Cmp(&st.high) > 0 {
		st.high, st.bidHigh = y.bid, y.bid
	}
	if y.bid.Cmp(&st.low) < 0 {
		st.low, st.bidLow = y.bid, y.bid
	}
	if y.ask.Cmp(&st.askHigh) > 0 {
		st.askHigh = y.ask
	}
	if y.ask.Cmp(&st.askLow) < 0 {
		st.askLow = y.ask
	}
}

// GenerateTicks moves every symbol that is in session and not held n steps along a seeded
// random walk (integer points, so no float ever touches a price).
func (s *Sim) GenerateTicks(n int) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	now := s.nowMs()
	for i := 0; i < n; i++ {
		for _, y := range s.symbolList {
			if y.held || !s.inSession(y, now) {
				continue
			}
			step := int64(y.stepPoints)
			if step < 1 {
				step = 1
			}
			tick := pointsPerTick(y)
			mid := y.bidK + (s.rng.Int64N(2*step+1) - step)
			mid -= mid % tick
			if mid <= tick {
				mid = y.bidK
			}
			spread := int64(y.spreadPoints)
			if spread > 1 {
				spread = spread - spread/5 + s.rng.Int64N(spread/5*2+1)
			}
			spread += (tick - spread%tick) % tick
			s.applyTickLocked(y, fromPoints(y, mid), fromPoints(y, mid+spread), 1+s.rng.Int64N(20), true)
		}
	}
	s.flushLocked()
	s.mu.Unlock()
}

func pointsPerTick(y *symbol) int64 {
	k, ok := toPoints(y, y.spec.TickSize)
	if !ok || k < 1 {
		return 1
	}
	return k
}
