package projections

import (
	"context"
	"fmt"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
)

// What the ClickHouse projections share.

// clickhouseBatchWait is the pace of each ClickHouse table's inserts: one insert of every
// partition's events every 3 seconds. MergeTree tables want few large inserts; at one per
// second each ClickHouse spent a quarter of a core merging parts under 600 orders/s, at one
// per 3 s under a tenth. Deal history (GET /v1/userTrades) and bars lag the log by that much
// at most, as the spec allows.
const clickhouseBatchWait = 3 * time.Second

// eventsOf returns the events of type E in a batch, in log order: a topic carries other
// types too.
func eventsOf[E events.Event](msgs []batch.Message) []E {
	var out []E
	for _, m := range msgs {
		if e, ok := m.Event.(E); ok {
			out = append(out, e)
		}
	}
	return out
}

// truncate empties tables before a replay, one statement each (ClickHouse 18.16 truncates one
// table per statement).
func truncate(ctx context.Context, conn driver.Conn, tables ...string) error {
	for _, table := range tables {
		if err := conn.Exec(ctx, "TRUNCATE TABLE "+table); err != nil {
			return fmt.Errorf("truncate %s: %w", table, err)
		}
	}
	return nil
}
