package query

import (
	"context"
	"fmt"

	"tradesvc/events"
)

// Kline limits of GET /v1/klines.
const (
	KlinesDefaultLimit = 500
	KlinesMaxLimit     = 1000
)

// BarReader reads candles built from the 1-minute bars (ClickHouse aggregates them, so a
// request for 1000 daily candles reads 1000 rows, not 1.44 million).
type BarReader interface {
	// Candles returns the candles of symbol for intervalMs (a whole number of minutes):
	// one per epoch-aligned bucket holding at least one 1-minute bar, with OpenTime (the
	// bucket's start) in [fromMs, toMs], oldest first, at most limit (the oldest ones). A
	// candle's Open is its first bar's open, Close its last bar's close, High and Low the
	// extremes, Count the sum of the bars' counts.
	Candles(ctx context.Context, symbol string, intervalMs, fromMs, toMs int64, limit int) ([]Bar, error)
}

// StoredBars are one symbol's stored 1-minute bid bars (what GET /v1/klines folds) from the
// start of the UTC day of its newest bar up to that bar, oldest first, and the tick-feed
// sequence of the newest tick they count (the newest bar's version).
type StoredBars struct {
	Symbol string
	Seq    uint64
	Bars   []Bar
}

// BarHistory reads the stored bars a starting gateway resumes its kline streams from
// (projections.HistoryReader implements it).
type BarHistory interface {
	// LatestDayBars returns the StoredBars of every symbol that has bars.
	LatestDayBars(ctx context.Context) ([]StoredBars, error)
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
type KlinesHandler struct{ withSymbols[BarReader] }

// Handle validates the query (-1120 interval, -1121 symbol, -1130 limit, -1128 endTime
// before startTime) and returns up to Limit candles, oldest first, whose open time lies in
// [startTime, endTime]. With startTime the window runs forward from it; otherwise it ends at
// endTime (or now) and reaches back Limit buckets.
func (h KlinesHandler) Handle(ctx context.Context, q KlinesQuery) ([]Kline, error) {
	iv, err := ParseInterval(q.Interval)
	if err != nil {
		return nil, err
	}
	limit, err := pageLimit(q.Limit, KlinesDefaultLimit, KlinesMaxLimit)
	if err != nil {
		return nil, err
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
	candles, err := h.read.Candles(ctx, q.Symbol, int64(iv), first, last, limit)
	if err != nil {
		return nil, fmt.Errorf("read %s candles of %s: %w", q.Interval, q.Symbol, err)
	}
	out := make([]Kline, 0, len(candles))
	for _, c := range candles {
		out = append(out, Kline{c.OpenTime, price(c.Open, spec.Digits), price(c.High, spec.Digits), price(c.Low, spec.Digits),
			price(c.Close, spec.Digits), c.Count, c.OpenTime + int64(iv) - 1, 0})
	}
	return out, nil
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
