package projections

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// clickhouseTables is what every ClickHouse projection stands on: its connection, and the
// pace of its inserts.
type clickhouseTables struct{ conn driver.Conn }

// MaxWait implements Batching.
func (clickhouseTables) MaxWait() time.Duration { return clickhouseBatchWait }

// Ping implements Pinger: ClickHouse answers.
func (t clickhouseTables) Ping(ctx context.Context) error { return t.conn.Ping(ctx) }

// onClickHouse builds a ClickHouse projection or reader named what with build, or says that
// it has no connection.
func onClickHouse[P any](conn driver.Conn, what string, build func(driver.Conn) *P) (*P, error) {
	if conn == nil {
		return nil, errors.New("projections: " + what + " needs a ClickHouse connection")
	}
	return build(conn), nil
}

// HistoryReader reads the history ClickHouse keeps for the queries: 1-minute bars for
// GET /v1/klines and the kline streams (bars_reader.go), the deal history for
// GET /v1/userTrades (deals_reader.go).
type HistoryReader struct{ conn driver.Conn }

// NewHistoryReader builds the reader.
func NewHistoryReader(conn driver.Conn) (*HistoryReader, error) {
	return onClickHouse(conn, "history reader", func(c driver.Conn) *HistoryReader { return &HistoryReader{conn: c} })
}

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

// truncateForgetting empties tables as truncate does, then (under mu) cache, what the
// projection remembers of their rows: after a reset nothing it remembers is stored any more.
func truncateForgetting[K comparable, V any](ctx context.Context, conn driver.Conn, mu *sync.Mutex, cache *map[K]V,
	tables ...string) error {
	if err := truncate(ctx, conn, tables...); err != nil {
		return err
	}
	mu.Lock()
	*cache = map[K]V{}
	mu.Unlock()
	return nil
}
