package projections

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
)

// MarketHistoryName is the consumer group of the ClickHouse market projection.
const MarketHistoryName = "projection.clickhouse.market"

// priceScale is the scale of price columns in ClickHouse (Decimal(18, 8)).
const priceScale = 8

// MarketHistory writes every tick to ClickHouse and keeps 1-minute bid bars. A bar row is
// rewritten with its full state whenever it changes, versioned by the sequence of its last
// tick; a tick at or below a bar's version was already counted and is skipped, so replays
// and redeliveries leave the bars exact.
type MarketHistory struct {
	clickhouseTables

	// mu serialises batches: the consumer applies partitions concurrently, and bars is
	// shared (each symbol lives in one partition, but the map does not).
	mu   sync.Mutex
	bars map[string]bar // the open bar of each symbol, as stored
}

type bar struct {
	openTime               int64
	open, high, low, close apd.Decimal
	ticks                  uint64
	ver                    uint64
}

// NewMarketHistory builds the projection.
func NewMarketHistory(conn driver.Conn) (*MarketHistory, error) {
	return onClickHouse(conn, "market history", func(c driver.Conn) *MarketHistory {
		return &MarketHistory{clickhouseTables: clickhouseTables{c}, bars: map[string]bar{}}
	})
}

// Topics the projection reads.
func (h *MarketHistory) Topics() []events.Topic { return []events.Topic{events.TopicTicks()} }

// Apply writes one batch: ticks first, then the final state of every bar the batch touched.
// The in-memory bars change only after both inserts succeeded, so a failed batch retried
// from the start counts nothing twice.
func (h *MarketHistory) Apply(ctx context.Context, msgs []batch.Message) error {
	ticks := eventsOf[*events.TickReceived](msgs)
	if len(ticks) == 0 {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	next := maps.Clone(h.bars)
	// dirty holds the final state of every bar this batch changed, including bars a later
	// tick of the same batch closed by opening the next minute.
	dirty := map[barKey]bar{}
	for _, t := range ticks {
		cur, ok := next[t.Symbol]
		if !ok {
			stored, found, err := h.loadLastBar(ctx, t.Symbol)
			if err != nil {
				return err
			}
			if found {
				cur, ok = stored, true
			}
		}
		if ok && t.Seq <= cur.ver {
			continue // already in the stored bar
		}
		openTime := t.Time - t.Time%60000
		switch {
		case !ok || openTime > cur.openTime:
			cur = bar{openTime: openTime, open: t.Bid, high: t.Bid, low: t.Bid, close: t.Bid, ticks: 1, ver: t.Seq}
		case openTime == cur.openTime:
			if t.Bid.Cmp(&cur.high) > 0 {
				cur.high = t.Bid
			}
			if t.Bid.Cmp(&cur.low) < 0 {
				cur.low = t.Bid
			}
			cur.close, cur.ticks, cur.ver = t.Bid, cur.ticks+1, t.Seq
		default:
			continue // a tick older than the open bar (clock step back on the server): not charted
		}
		next[t.Symbol] = cur
		dirty[barKey{t.Symbol, cur.openTime}] = cur
	}
	if err := h.insertTicks(ctx, ticks); err != nil {
		return err
	}
	if len(dirty) > 0 {
		if err := h.insertBars(ctx, dirty); err != nil {
			return err
		}
	}
	h.bars = next
	return nil
}

func (h *MarketHistory) insertTicks(ctx context.Context, ticks []*events.TickReceived) error {
	b, err := h.conn.PrepareBatch(ctx, "INSERT INTO ticks (symbol, time_ms, seq, bid, ask, last, volume, event_date)")
	if err != nil {
		return fmt.Errorf("prepare ticks insert: %w", err)
	}
	defer b.Abort()
	for _, t := range ticks {
		if err := b.Append(t.Symbol, t.Time, t.Seq, dec.Fixed(t.Bid, priceScale), dec.Fixed(t.Ask, priceScale),
			dec.Fixed(t.Last, priceScale), t.Volume, time.UnixMilli(t.Time).UTC()); err != nil {
			return fmt.Errorf("append tick: %w", err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %d ticks: %w", len(ticks), err)
	}
	return nil
}

type barKey struct {
	symbol   string
	openTime int64
}

func (h *MarketHistory) insertBars(ctx context.Context, bars map[barKey]bar) error {
	b, err := h.conn.PrepareBatch(ctx, "INSERT INTO bars_1m (symbol, open_time, open, high, low, close, ticks, ver, event_date)")
	if err != nil {
		return fmt.Errorf("prepare bars insert: %w", err)
	}
	defer b.Abort()
	for key, br := range bars {
		if err := b.Append(key.symbol, br.openTime, dec.Fixed(br.open, priceScale), dec.Fixed(br.high, priceScale),
			dec.Fixed(br.low, priceScale), dec.Fixed(br.close, priceScale), br.ticks, br.ver,
			time.UnixMilli(br.openTime).UTC()); err != nil {
			return fmt.Errorf("append bar: %w", err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %d bars: %w", len(bars), err)
	}
	return nil
}

// loadLastBar reads the newest stored bar of symbol (after a restart or a partition move).
func (h *MarketHistory) loadLastBar(ctx context.Context, symbol string) (bar, bool, error) {
	rows, err := h.conn.Query(ctx, `SELECT open_time, toString(open), toString(high), toString(low), toString(close), ticks, ver
		FROM bars_1m FINAL WHERE symbol = ? ORDER BY open_time DESC LIMIT 1`, symbol)
	if err != nil {
		return bar{}, false, fmt.Errorf("read last bar of %s: %w", symbol, err)
	}
	defer rows.Close()
	if !rows.Next() {
		return bar{}, false, rows.Err()
	}
	var b bar
	var o, hi, lo, c string
	if err := rows.Scan(&b.openTime, &o, &hi, &lo, &c, &b.ticks, &b.ver); err != nil {
		return bar{}, false, fmt.Errorf("scan last bar of %s: %w", symbol, err)
	}
	if err := parseColumns([]string{o, hi, lo, c}, &b.open, &b.high, &b.low, &b.close); err != nil {
		return bar{}, false, fmt.Errorf("last bar of %s: %w", symbol, err)
	}
	return b, true, nil
}

// Reset empties the tick and bar tables before a replay.
func (h *MarketHistory) Reset(ctx context.Context) error {
	return truncateForgetting(ctx, h.conn, &h.mu, &h.bars, "ticks", "bars_1m")
}

// Accepts implements Accepting: ticks only (day statistics are not decoded).
func (h *MarketHistory) Accepts(eventType string) bool { return eventType == "TickReceived_v1" }
