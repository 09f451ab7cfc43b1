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

// clickhouseBatchWait gathers about a second of events per insert: MergeTree tables want a
// few large inserts per second, not one per message.
const clickhouseBatchWait = time.Second

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
