package query

import (
	"context"
	"errors"
	"fmt"

	"tradesvc/events"
)

// Kline limits of GET /v1/klines.
const (
	KlinesDefaultLimit = 500
	KlinesMaxLimit     = 1000
)

// BarReader reads 1-minute bars (ClickHouse).
type BarReader interface {
	// Bars1m returns the bars of symbol with fromMs <= OpenTime <= toMs, oldest first,
	// at most limit of them (the oldest ones).
	Bars1m(ctx context.Context, symbol string, fromMs, toMs int64, limit int) ([]Bar, error)
}

// KlinesQuery asks for candles. StartTime and EndTime are nil when not sent; Limit 0 is the
// default. Now is the server time, the implicit end of an open-ended request.
type KlinesQuery struct {
	Symbol    string
	Interval  string
	StartTime *int64
	EndTime   *int64
	Limit     int
	Now       int64
}

// KlinesHandler answers GET /v1/klines by aggregating 1-minute bars into epoch-aligned UTC
// buckets. Buckets without any bar are omitted, as on the wire of comparable services.
type KlinesHandler struct {
	bars    BarReader
	symbols SymbolLookup
}

// NewKlinesHandler builds the handler.
func NewKlinesHandler(bars BarReader, symbols SymbolLookup) (KlinesHandler, error) {
	if bars == nil || symbols == nil {
		return KlinesHandler{}, errors.New("query: nil BarReader or SymbolLookup")
	}
	return KlinesHandler{bars: bars, symbols: symbols}, nil
}

// Handle validates the query (-1120 interval, -1121 symbol, -1130 limit, -1128 endTime
// before startTime) and returns up to Limit candles, oldest first, whose open time lies in
// [startTime, endTime]. With startTime the window runs forward from it; otherwise it ends at
// endTime (or now) and reaches back Limit buckets.
func (h KlinesHandler) Handle(ctx context.Context, q KlinesQuery) ([]Kline, error) {
	iv, err := ParseInterval(q.Interval)
	if err != nil {
		return nil, err
	}
	limit := q.Limit
	if limit == 0 {
		limit = KlinesDefaultLimit
	}
	if limit < 1 || limit > KlinesMaxLimit {
		return nil, events.Reject(events.CodeInvalidData, "Invalid limit: 1 to 1000.")
	}
	if q.StartTime != nil && q.EndTime != nil && *q.EndTime < *q.StartTime {
		return nil, events.Reject(events.CodeBadCombination, "endTime is before startTime.")
	}
	spec, err := lookupSymbol(ctx, h.symbols, q.Symbol)
	if err != nil {
		return nil, err
	}
	first, last := klineWindow(iv, q.StartTime, q.EndTime, q.Now, limit)
	if last < first {
		return []Kline{}, nil
	}
	span := int64(iv) / minuteMs
	bars, err := h.bars.Bars1m(ctx, q.Symbol, first, last+int64(iv)-1, int((last-first)/int64(iv)+1)*int(span))
	if err != nil {
		return nil, fmt.Errorf("read 1m bars of %s: %w", q.Symbol, err)
	}
	return aggregate(bars, iv, spec.Digits, limit), nil
}

// klineWindow returns the open times of the first and last bucket that may be returned.
func klineWindow(iv Interval, start, end *int64, now int64, limit int) (first, last int64) {
	n := int64(limit-1) * int64(iv)
	if start != nil {
		first = iv.Ceil(*start)
		last = first + n
		if end != nil && iv.Floor(*end) < last {
			last = iv.Floor(*end)
		}
		return first, last
	}
	e := now
	if end != nil {
		e = *end
	}
	last = iv.Floor(e)
	return last - n, last
}

// aggregate folds 1-minute bars (oldest first) into buckets of iv.
func aggregate(bars []Bar, iv Interval, digits int32, limit int) []Kline {
	out := make([]Kline, 0, min(len(bars), limit))
	var cur *Bar
	var curOpen int64
	flush := func() {
		if cur != nil {
			out = append(out, Kline{curOpen, price(cur.Open, digits), price(cur.High, digits), price(cur.Low, digits),
				price(cur.Close, digits), cur.Count, curOpen + int64(iv) - 1, 0})
		}
	}
	for i := range bars {
		b := bars[i]
		open := iv.Floor(b.OpenTime)
		if cur != nil && open == curOpen {
			if b.High.Cmp(&cur.High) > 0 {
				cur.High.Set(&b.High)
			}
			if b.Low.Cmp(&cur.Low) < 0 {
				cur.Low.Set(&b.Low)
			}
			cur.Close.Set(&b.Close)
			cur.Count += b.Count
			continue
		}
		flush()
		if len(out) == limit {
			return out
		}
		nb := Bar{OpenTime: open, Count: b.Count}
		nb.Open.Set(&b.Open)
		nb.High.Set(&b.High)
		nb.Low.Set(&b.Low)
		nb.Close.Set(&b.Close)
		cur, curOpen = &nb, open
	}
	flush()
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}
