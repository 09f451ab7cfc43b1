package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
)

// DealHistoryName is the consumer group of the ClickHouse deal-history projection.
const DealHistoryName = "projection.clickhouse.deals"

// moneyScale is the scale of money columns in ClickHouse (Decimal(18, 4)).
const moneyScale = 4

// DealHistory writes every deal the trade server reported into ClickHouse for analysts.
// Rows are keyed by deal ticket in a ReplacingMergeTree, so redelivery collapses.
type DealHistory struct{ clickhouseTables }

// NewDealHistory builds the projection.
func NewDealHistory(conn driver.Conn) (*DealHistory, error) {
	return onClickHouse(conn, "deal history", func(c driver.Conn) *DealHistory { return &DealHistory{clickhouseTables{c}} })
}

// Topics the projection reads.
func (h *DealHistory) Topics() []events.Topic { return []events.Topic{events.TopicTrades()} }

// Apply inserts the batch's deals in one insert.
func (h *DealHistory) Apply(ctx context.Context, msgs []batch.Message) error {
	deals := eventsOf[*events.DealAdded](msgs)
	if len(deals) == 0 {
		return nil
	}
	b, err := h.conn.PrepareBatch(ctx, `INSERT INTO deals (login, deal_id, order_id, position_id, symbol, action, entry,
		reason, volume, price, profit, commission, swap, comment, time_ms, seq, event_date)`)
	if err != nil {
		return fmt.Errorf("prepare deals insert: %w", err)
	}
	defer b.Abort()
	for _, d := range deals {
		if err := b.Append(d.Login, d.DealID, d.OrderID, d.PositionID, d.Symbol, int32(d.Action), int32(d.Entry),
			int32(d.Reason), dec.Fixed(d.Volume, priceScale), dec.Fixed(d.Price, priceScale),
			dec.Fixed(d.Profit, moneyScale), dec.Fixed(d.Commission, moneyScale), dec.Fixed(d.Swap, moneyScale),
			d.Comment, d.Time, d.Seq, time.UnixMilli(d.Time).UTC()); err != nil {
			return fmt.Errorf("append deal %d: %w", d.DealID, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %d deals: %w", len(deals), err)
	}
	return nil
}

// Reset empties the deal history before a replay.
func (h *DealHistory) Reset(ctx context.Context) error {
	return truncate(ctx, h.conn, "deals")
}

// Accepts implements Accepting: deals only (the trades topic's other facts are not decoded).
func (h *DealHistory) Accepts(eventType string) bool { return eventType == "DealAdded_v1" }
