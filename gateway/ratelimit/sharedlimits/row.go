package sharedlimits

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"tradesvc/gateway/ratelimit"
)

// row is a key's row: its version and state (found false: no row).
type row struct {
	found   bool
	version int64
	st      ratelimit.State
}

// written is the outcome of a compare-and-set: ok with the row's new version.
type written struct {
	ok      bool
	version int64
}

// swapSQL writes the state when the row still has version $2 (or does not exist yet), and
// otherwise returns the row as it is now: the failed write locked it, and FOR UPDATE reads a
// locked row's newest committed version, not the statement's older snapshot (under which a
// gateway retrying against a busy key would see the version it already lost on, again and
// again). A row another gateway inserted after the snapshot is invisible to both parts: the
// statement then returns nothing, and the caller tries again with a fresh snapshot.
const swapSQL = `WITH w AS (
	INSERT INTO cmd.rate_limits AS r (key_id, version, minute, ten_sec, weight, orders_10s, orders_1m,
		weight_throttled, orders_throttled, ban_until, ban_level, banned)
	VALUES ($1, 1, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
	ON CONFLICT (key_id) DO UPDATE SET version = r.version + 1, minute = EXCLUDED.minute,
		ten_sec = EXCLUDED.ten_sec, weight = EXCLUDED.weight, orders_10s = EXCLUDED.orders_10s,
		orders_1m = EXCLUDED.orders_1m, weight_throttled = EXCLUDED.weight_throttled,
		orders_throttled = EXCLUDED.orders_throttled, ban_until = EXCLUDED.ban_until,
		ban_level = EXCLUDED.ban_level, banned = EXCLUDED.banned
	WHERE r.version = $2
	RETURNING r.version),
cur AS (
	SELECT version, minute, ten_sec, weight, orders_10s, orders_1m, weight_throttled, orders_throttled,
		ban_until, ban_level, banned
	FROM cmd.rate_limits WHERE key_id = $1 AND NOT EXISTS (SELECT 1 FROM w) FOR UPDATE)
SELECT true, w.version, 0::bigint, 0::bigint, 0, 0, 0, 0::bigint, 0::bigint, 0::bigint, 0, false FROM w
UNION ALL
SELECT false, * FROM cur`

const lockSQL = readSQL + ` FOR UPDATE`

const updateSQL = `UPDATE cmd.rate_limits SET version = version + 1, minute = $2, ten_sec = $3, weight = $4,
	orders_10s = $5, orders_1m = $6, weight_throttled = $7, orders_throttled = $8, ban_until = $9, ban_level = $10,
	banned = $11 WHERE key_id = $1 RETURNING version`

const insertSQL = `INSERT INTO cmd.rate_limits (key_id, version, minute, ten_sec, weight, orders_10s, orders_1m,
	weight_throttled, orders_throttled, ban_until, ban_level, banned)
	VALUES ($1, 1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) ON CONFLICT (key_id) DO NOTHING RETURNING version`

const readSQL = `SELECT version, minute, ten_sec, weight, orders_10s, orders_1m, weight_throttled, orders_throttled,
	ban_until, ban_level, banned FROM cmd.rate_limits WHERE key_id = $1`

// swap writes st as key id's state if its row is still at version (0: not seen yet).
func (s *Store) swap(ctx context.Context, id string, version int64, st *ratelimit.State) (written, row, error) {
	var won bool
	var cur row
	err := s.pool.QueryRow(ctx, swapSQL, id, version, st.Minute, st.TenSec, st.Weight, st.Orders10s, st.Orders1m,
		st.WeightThrottled, st.OrdersThrottled, st.BanUntil, st.BanLevel, st.Banned).Scan(&won, &cur.version,
		&cur.st.Minute, &cur.st.TenSec, &cur.st.Weight, &cur.st.Orders10s, &cur.st.Orders1m,
		&cur.st.WeightThrottled, &cur.st.OrdersThrottled, &cur.st.BanUntil, &cur.st.BanLevel, &cur.st.Banned)
	if errors.Is(err, pgx.ErrNoRows) {
		return written{}, row{}, nil // inserted by another gateway after this snapshot: try again
	}
	if err != nil {
		return written{}, row{}, fmt.Errorf("charge key %s: %w", id, err)
	}
	if won {
		return written{ok: true, version: cur.version}, row{}, nil
	}
	cur.found = true
	return written{}, cur, nil
}

// read returns key id's row.
func (s *Store) read(ctx context.Context, id string) (row, error) {
	cur, err := scanRow(s.pool.QueryRow(ctx, readSQL, id))
	if err != nil {
		return row{}, fmt.Errorf("read key %s: %w", id, err)
	}
	return cur, nil
}

// locked decides c on key id's row under its lock, in one transaction, and returns the row
// it wrote (found false: another gateway inserted the key first; try again).
func (s *Store) locked(ctx context.Context, id string, c ratelimit.Charge) (ratelimit.Decision, ratelimit.Usage, row, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return ratelimit.Decision{}, ratelimit.Usage{}, row{}, fmt.Errorf("charge key %s: %w", id, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit
	cur, err := scanRow(tx.QueryRow(ctx, lockSQL, id))
	if err != nil {
		return ratelimit.Decision{}, ratelimit.Usage{}, row{}, fmt.Errorf("lock key %s: %w", id, err)
	}
	st := cur.st
	d, u := st.Apply(&s.policy, c)
	q := updateSQL
	if !cur.found {
		q = insertSQL
	}
	var version int64
	err = tx.QueryRow(ctx, q, id, st.Minute, st.TenSec, st.Weight, st.Orders10s, st.Orders1m, st.WeightThrottled,
		st.OrdersThrottled, st.BanUntil, st.BanLevel, st.Banned).Scan(&version)
	if errors.Is(err, pgx.ErrNoRows) {
		return ratelimit.Decision{}, ratelimit.Usage{}, row{}, nil
	}
	if err != nil {
		return ratelimit.Decision{}, ratelimit.Usage{}, row{}, fmt.Errorf("charge key %s: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return ratelimit.Decision{}, ratelimit.Usage{}, row{}, fmt.Errorf("charge key %s: %w", id, err)
	}
	return d, u, row{found: true, version: version, st: st}, nil
}

// scanRow reads a row of readSQL or lockSQL (found false: none).
func scanRow(r pgx.Row) (row, error) {
	var cur row
	err := r.Scan(&cur.version, &cur.st.Minute, &cur.st.TenSec, &cur.st.Weight, &cur.st.Orders10s, &cur.st.Orders1m,
		&cur.st.WeightThrottled, &cur.st.OrdersThrottled, &cur.st.BanUntil, &cur.st.BanLevel, &cur.st.Banned)
	if errors.Is(err, pgx.ErrNoRows) {
		return row{}, nil
	}
	if err != nil {
		return row{}, err
	}
	cur.found = true
	return cur, nil
}
