// Package projections turns events into read models: Postgres tables for reference data and
// trading state, ClickHouse tables for history, and the in-memory market projection. Each
// projection has a stable consumer-group name, applies batches idempotently (a redelivered
// or replayed event never moves a row backwards or counts twice) and can be rebuilt from the
// Kafka log with `tradesvc replay`.
package projections

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
)

// ReferenceName is the consumer group (before the deployment prefix) of the reference
// projection. Renaming it re-consumes the whole topic.
const ReferenceName = "projection.reference"

// Reference projects SymbolSpecified, ServerSpecified and AccountSnapshot into rm.symbols,
// rm.server and rm.accounts.
type Reference struct {
	pool      *pgxpool.Pool
	positions *Positions
	// changed is called after a batch that changed what readers cache commits, so that they
	// drop it at once: the symbols and server record (RefAll), or only what the request
	// pipeline checks of accounts (RefAccounts: a new account, its active or trade-allowed
	// flag). An account's figures moving (equity with every tick) changes no cache.
	changed func(RefScope)
}

// RefScope says what a reference change invalidates.
type RefScope string

// Reference change scopes (the payload of a NOTIFY on ReferenceChannel).
const (
	RefAll      RefScope = ""
	RefAccounts RefScope = "accounts"
)

// NewReference builds the projection; changed may be nil.
func NewReference(pool *pgxpool.Pool, changed func(RefScope)) (*Reference, error) {
	if pool == nil {
		return nil, fmt.Errorf("projections: reference needs a pool")
	}
	if changed == nil {
		changed = func(RefScope) {}
	}
	return &Reference{pool: pool, changed: changed, positions: NewPositions(pool, ReferenceName)}, nil
}

// Positions implements Positioned.
func (r *Reference) Positions() batch.Positions { return r.positions }

// Accepts implements Accepting.
func (r *Reference) Accepts(eventType string) bool {
	switch eventType {
	case "SymbolSpecified_v1", "ServerSpecified_v1", "AccountSnapshot_v1":
		return true
	}
	return false
}

// Topics the projection reads.
func (r *Reference) Topics() []events.Topic { return []events.Topic{events.TopicReference()} }

// Apply writes one batch in one transaction.
func (r *Reference) Apply(ctx context.Context, msgs []batch.Message) error {
	b := &pgx.Batch{}
	scope, notify := RefAll, false
	for _, m := range msgs {
		switch e := m.Event.(type) {
		case *events.SymbolSpecified:
			spec, err := json.Marshal(e)
			if err != nil {
				return fmt.Errorf("encode symbol %s: %w", e.Symbol, err)
			}
			b.Queue(`INSERT INTO rm.symbols (symbol, spec, spec_time) VALUES ($1, $2, $3)
				ON CONFLICT (symbol) DO UPDATE SET spec = EXCLUDED.spec, spec_time = EXCLUDED.spec_time, updated_at = now()
				WHERE rm.symbols.spec_time <= EXCLUDED.spec_time`, e.Symbol, spec, e.Time)
			scope, notify = RefAll, true
		case *events.ServerSpecified:
			b.Queue(`INSERT INTO rm.server (id, name, time_zone_offset_minutes, info_time) VALUES (1, $1, $2, $3)
				ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, time_zone_offset_minutes = EXCLUDED.time_zone_offset_minutes,
				info_time = EXCLUDED.info_time WHERE rm.server.info_time <= EXCLUDED.info_time`,
				e.Name, e.TimeZoneOffsetMinutes, e.Time)
			scope, notify = RefAll, true
		case *events.AccountSnapshot:
			// RETURNING says whether what the request pipeline checks changed: a new account,
			// or its active or trade-allowed flag (old is read before the upsert).
			b.Queue(`WITH old AS (SELECT trade_allowed, active FROM rm.accounts WHERE login = $1)
				INSERT INTO rm.accounts (login, grp, currency, leverage, demo, trade_allowed, active, balance, credit,
				equity, margin, free_margin, profit, margin_level, update_time, observed_at)
				VALUES ($1,$2,$3,$4,$5,$6,$7,$8::numeric,$9::numeric,$10::numeric,$11::numeric,$12::numeric,$13::numeric,$14::numeric,$15,$16)
				ON CONFLICT (login) DO UPDATE SET grp = EXCLUDED.grp, currency = EXCLUDED.currency, leverage = EXCLUDED.leverage,
				demo = EXCLUDED.demo, trade_allowed = EXCLUDED.trade_allowed, active = EXCLUDED.active, balance = EXCLUDED.balance,
				credit = EXCLUDED.credit, equity = EXCLUDED.equity, margin = EXCLUDED.margin, free_margin = EXCLUDED.free_margin,
				profit = EXCLUDED.profit, margin_level = EXCLUDED.margin_level, update_time = EXCLUDED.update_time,
				observed_at = EXCLUDED.observed_at
				WHERE rm.accounts.observed_at <= EXCLUDED.observed_at
				RETURNING NOT EXISTS (SELECT 1 FROM old) OR (SELECT trade_allowed FROM old) IS DISTINCT FROM trade_allowed
					OR (SELECT active FROM old) IS DISTINCT FROM active`,
				e.Login, e.Group, e.Currency, e.Leverage, e.Demo, e.TradeAllowed, e.Active,
				dec.String(e.Balance), dec.String(e.Credit), dec.String(e.Equity), dec.String(e.Margin),
				dec.String(e.FreeMargin), dec.String(e.Profit), dec.String(e.MarginLevel), e.Time, e.ObservedAt).Query(
				func(rows pgx.Rows) error {
					for rows.Next() {
						var flags bool
						if err := rows.Scan(&flags); err != nil {
							return err
						}
						if flags && !notify {
							scope, notify = RefAccounts, true
						}
					}
					return rows.Err()
				})
		}
	}
	if err := applyPositioned(ctx, r.pool, r.positions, msgs, b); err != nil {
		return fmt.Errorf("reference projection: %w", err)
	}
	if !notify {
		return nil // figures only: no reader caches them
	}
	// Readers drop their caches: this process's at once, the others' on the notification.
	r.changed(scope)
	if _, err := r.pool.Exec(ctx, "SELECT pg_notify($1, $2)", ReferenceChannel, string(scope)); err != nil && ctx.Err() == nil {
		slog.Warn("reference projection: notify readers", "err", err) // their caches expire anyway
	}
	return nil
}

// ReferenceChannel is notified after reference data (symbols, server, accounts) changed.
const ReferenceChannel = "rm_reference"

// applyPositioned runs b in one transaction with the advance of positions over msgs
// (synchronous commit: what was applied and where the log stands are committed together).
// Messages the store says were applied already are left out of b's effects only by b's
// own idempotence: a projection whose statements only move rows forward may re-run them.
func applyPositioned(ctx context.Context, pool *pgxpool.Pool, positions *Positions, msgs []batch.Message, b *pgx.Batch) error {
	var adv *advance
	err := inTx(ctx, pool, func(tx pgx.Tx) error {
		var err error
		if _, adv, err = positions.plan(ctx, tx, msgs); err != nil {
			return err
		}
		positions.queue(b, adv, false)
		if b.Len() == 0 {
			return nil
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return adv.check()
	})
	if err != nil {
		return positions.failed(adv, err)
	}
	positions.committed(adv)
	return nil
}

// Reset empties the reference read models before a replay.
func (r *Reference) Reset(ctx context.Context) error {
	_, err := r.pool.Exec(ctx, `TRUNCATE rm.symbols, rm.server, rm.accounts`)
	return err
}

// Ping implements Pinger: the read-model database answers.
func (p *Reference) Ping(ctx context.Context) error { return p.pool.Ping(ctx) }
