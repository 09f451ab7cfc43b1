package streams

import (
	"github.com/cockroachdb/apd/v3"

	"tradesvc/query"
)

// KlineInterval is one supported kline interval: its wire name and bucket length.
type KlineInterval struct {
	Name string
	Ms   int64
}

// KlineIntervals are the intervals of GET /v1/klines (1w and 1M are not supported), in the
// order bars are kept.
var KlineIntervals = [...]KlineInterval{
	{"1m", 60_000}, {"5m", 300_000}, {"15m", 900_000}, {"30m", 1_800_000},
	{"1h", 3_600_000}, {"2h", 7_200_000}, {"4h", 14_400_000}, {"1d", 86_400_000},
}

// klineIntervalIndex returns the index of a wire interval name, or -1.
func klineIntervalIndex(name string) int {
	for i, iv := range KlineIntervals {
		if iv.Name == name {
			return i
		}
	}
	return -1
}

// floorMs is the open time of the epoch-aligned UTC bucket of length ms containing t.
func floorMs(t, ms int64) int64 {
	r := t % ms
	if r < 0 {
		r += ms
	}
	return t - r
}

// bar is one candle built from bids, like the REST klines (which aggregate 1-minute bid bars).
type bar struct {
	openTime   int64
	o, h, l, c apd.Decimal
	// n counts the ticks in the bucket (the REST kline's count column).
	n int64
}

// klines holds the current bar of every interval of one symbol.
type klines struct {
	bars [len(KlineIntervals)]bar
	// ver is the feed sequence of the newest tick the bars hold (seeded or folded): a tick at
	// or below it is already counted.
	ver uint64
}

// seed sets the current bar of every interval from stored 1-minute bars (oldest first, from
// the start of the UTC day of the newest one up to it) whose newest tick has feed sequence
// seq, folding them as GET /v1/klines does (first open, highest high, lowest low, last
// close, counts summed). Ticks up to seq are then skipped by apply. It reports false, and
// changes nothing, once the symbol has folded a tick (its bars are already live) or when
// there is no bar.
func (k *klines) seed(seq uint64, day []query.Bar) bool {
	if k.ver != 0 || len(day) == 0 {
		return false
	}
	for i := range k.bars {
		if k.bars[i].n > 0 {
			return false
		}
	}
	newest := day[len(day)-1].OpenTime
	for i, iv := range KlineIntervals {
		b := &k.bars[i]
		open := floorMs(newest, iv.Ms)
		first := true
		for j := range day {
			m := &day[j]
			if m.OpenTime < open {
				continue
			}
			if first {
				first = false
				b.openTime = open
				b.o.Set(&m.Open)
				b.h.Set(&m.High)
				b.l.Set(&m.Low)
			}
			if m.High.Cmp(&b.h) > 0 {
				b.h.Set(&m.High)
			}
			if m.Low.Cmp(&b.l) < 0 {
				b.l.Set(&m.Low)
			}
			b.c.Set(&m.Close)
			b.n += m.Count
		}
	}
	k.ver = seq
	return true
}

// apply folds one tick into the bar of every interval and reports each change through emit:
// when the tick opens a new bucket, first the finished bar (closed) and then the new one;
// otherwise the updated current bar. A tick the bars already hold (seq at or below ver, as
// after a seed) changes nothing; nor, for an interval, does a tick older than its current
// bucket (a late redelivery). seq 0 is unknown and always folded. emit must not keep b.
func (k *klines) apply(t int64, seq uint64, bid *apd.Decimal, emit func(iv int, b *bar, closed bool)) {
	if seq != 0 {
		if seq <= k.ver {
			return
		}
		k.ver = seq
	}
	for i := range k.bars {
		b := &k.bars[i]
		open := floorMs(t, KlineIntervals[i].Ms)
		switch {
		case b.n > 0 && open < b.openTime:
			continue
		case b.n > 0 && open == b.openTime:
			if bid.Cmp(&b.h) > 0 {
				b.h.Set(bid)
			}
			if bid.Cmp(&b.l) < 0 {
				b.l.Set(bid)
			}
			b.c.Set(bid)
			b.n++
		default:
			if b.n > 0 {
				emit(i, b, true)
			}
			b.openTime, b.n = open, 1
			b.o.Set(bid)
			b.h.Set(bid)
			b.l.Set(bid)
			b.c.Set(bid)
		}
		emit(i, b, false)
	}
}
