package projections

import (
	"context"
	"fmt"
	"sync"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"tradesvc/events"
	"tradesvc/infra/kafka/batch"
)

// AccountDimensionName is the consumer group of the projection of the reference topic into
// ClickHouse's accounts and trade_server tables.
const AccountDimensionName = "projection.clickhouse.reference"

// AccountDimension keeps ClickHouse's accounts (login, group, currency, leverage, flags) and
// trade_server (its time-zone offset) tables, the dimensions analysts group deals by: P&L
// per currency never adds USC to USD, volume per account group, the trade server's day.
// Account snapshots are republished whenever a floating figure moves, so a row is written
// only when one of its columns changed since this process last wrote it (a restart writes
// each account once more; ReplacingMergeTree keeps the newest by observed_ms).
type AccountDimension struct {
	clickhouseTables

	mu      sync.Mutex
	written map[int64]accountDim
}

type accountDim struct {
	group, currency    string
	leverage           int32
	demo, tradeAllowed uint8
}

// NewAccountDimension builds the projection.
func NewAccountDimension(conn driver.Conn) (*AccountDimension, error) {
	return onClickHouse(conn, "account dimension", func(c driver.Conn) *AccountDimension {
		return &AccountDimension{clickhouseTables: clickhouseTables{c}, written: map[int64]accountDim{}}
	})
}

// Topics the projection reads.
func (p *AccountDimension) Topics() []events.Topic { return []events.Topic{events.TopicReference()} }

// Apply writes the accounts whose dimensions changed and the trade server's record.
func (p *AccountDimension) Apply(ctx context.Context, msgs []batch.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	newest := map[int64]*events.AccountSnapshot{}
	var server *events.ServerSpecified
	for _, m := range msgs {
		switch e := m.Event.(type) {
		case *events.AccountSnapshot:
			if cur, ok := newest[e.Login]; !ok || e.ObservedAt >= cur.ObservedAt {
				newest[e.Login] = e
			}
		case *events.ServerSpecified:
			if server == nil || e.Time >= server.Time {
				server = e
			}
		}
	}
	changed := map[int64]accountDim{}
	var snaps []*events.AccountSnapshot
	for login, e := range newest {
		d := accountDim{group: e.Group, currency: e.Currency, leverage: int32(e.Leverage), demo: boolByte(e.Demo),
			tradeAllowed: boolByte(e.TradeAllowed)}
		if old, ok := p.written[login]; ok && old == d {
			continue
		}
		changed[login] = d
		snaps = append(snaps, e)
	}
	if len(snaps) > 0 {
		if err := p.insertAccounts(ctx, snaps, changed); err != nil {
			return err
		}
	}
	if server != nil {
		if err := p.insertServer(ctx, server); err != nil {
			return err
		}
	}
	for login, d := range changed {
		p.written[login] = d
	}
	return nil
}

func (p *AccountDimension) insertAccounts(ctx context.Context, snaps []*events.AccountSnapshot, dims map[int64]accountDim) error {
	b, err := p.conn.PrepareBatch(ctx, "INSERT INTO accounts (login, grp, currency, leverage, demo, trade_allowed, observed_ms)")
	if err != nil {
		return fmt.Errorf("prepare accounts insert: %w", err)
	}
	defer b.Abort()
	for _, e := range snaps {
		d := dims[e.Login]
		if err := b.Append(e.Login, d.group, d.currency, d.leverage, d.demo, d.tradeAllowed, e.ObservedAt); err != nil {
			return fmt.Errorf("append account %d: %w", e.Login, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %d accounts: %w", len(snaps), err)
	}
	return nil
}

func (p *AccountDimension) insertServer(ctx context.Context, e *events.ServerSpecified) error {
	b, err := p.conn.PrepareBatch(ctx, "INSERT INTO trade_server (id, name, time_zone_offset_minutes, time_ms)")
	if err != nil {
		return fmt.Errorf("prepare trade_server insert: %w", err)
	}
	defer b.Abort()
	if err := b.Append(uint8(1), e.Name, int32(e.TimeZoneOffsetMinutes), e.Time); err != nil {
		return fmt.Errorf("append trade server: %w", err)
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert trade server: %w", err)
	}
	return nil
}

// Reset empties both tables before a replay.
func (p *AccountDimension) Reset(ctx context.Context) error {
	return truncateForgetting(ctx, p.conn, &p.mu, &p.written, "accounts", "trade_server")
}

func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
