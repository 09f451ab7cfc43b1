// Package listenkeys keeps the user data stream's listen keys in Postgres (cmd.listen_keys,
// migration 0003): at most one active key per API key, shared by every gateway instance.
package listenkeys

import (
	"context"
	"errors"
	"fmt"
	"time"
	"tradesvc/infra/postgres"
	"tradesvc/query"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Store implements query.ListenKeyStore on a command-side pool (synchronous commit).
type Store struct {
	pool *pgxpool.Pool
}

// New builds the store.
func New(pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("listenkeys: no database pool")
	}
	return &Store{pool: pool}, nil
}

const columns = `listen_key, api_key_id, api_key, created_at, expires_at, deleted_at`

func scan(row pgx.Row) (query.ListenKey, error) {
	var k query.ListenKey
	var deleted *time.Time
	err := row.Scan(&k.Key, &k.APIKeyID, &k.APIKey, &k.CreatedAt, &k.ExpiresAt, &deleted)
	k.Deleted = deleted != nil
	return k, err
}

// Create returns the API key's active listen key at now, or retires a lapsed one and stores
// candidate. Two concurrent first POSTs of one API key race on the unique index; the loser
// retries and finds the winner's key.
func (s *Store) Create(ctx context.Context, candidate query.ListenKey, now time.Time) (query.ListenKey, error) {
	for attempt := 0; ; attempt++ {
		k, err := s.create(ctx, candidate, now)
		var pgErr *pgconn.PgError
		if attempt < 3 && errors.As(err, &pgErr) && pgErr.Code == "23505" { // unique_violation
			continue
		}
		return k, err
	}
}

func (s *Store) create(ctx context.Context, c query.ListenKey, now time.Time) (query.ListenKey, error) {
	var out query.ListenKey
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, err := scan(tx.QueryRow(ctx, `SELECT `+columns+` FROM cmd.listen_keys
			WHERE api_key_id = $1 AND deleted_at IS NULL FOR UPDATE`, c.APIKeyID))
		switch {
		case err == nil && cur.Active(now):
			out = cur
			return nil
		case err == nil:
			if _, err := tx.Exec(ctx, `UPDATE cmd.listen_keys SET deleted_at = $2 WHERE listen_key = $1`, cur.Key, now); err != nil {
				return fmt.Errorf("retire lapsed listen key: %w", err)
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("read active listen key: %w", err)
		}
		out, err = scan(tx.QueryRow(ctx, `INSERT INTO cmd.listen_keys (listen_key, api_key_id, api_key, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5) RETURNING `+columns, c.Key, c.APIKeyID, c.APIKey, c.CreatedAt, c.ExpiresAt))
		return err
	})
	if err != nil {
		return query.ListenKey{}, fmt.Errorf("listenkeys: create: %w", err)
	}
	return out, nil
}

// Extend moves the expiry of the API key's active listen key (the named one, or any when
// listenKey is empty) to expiresAt.
func (s *Store) Extend(ctx context.Context, apiKeyID int64, listenKey string, now, expiresAt time.Time) (query.ListenKey, bool, error) {
	return s.update(ctx, `expires_at = $4`, apiKeyID, listenKey, now, expiresAt)
}

// Delete deactivates the API key's active listen key (the named one, or any).
func (s *Store) Delete(ctx context.Context, apiKeyID int64, listenKey string, now time.Time) (query.ListenKey, bool, error) {
	return s.update(ctx, `deleted_at = $4`, apiKeyID, listenKey, now, now)
}

func (s *Store) update(ctx context.Context, set string, apiKeyID int64, listenKey string, now, at time.Time) (query.ListenKey, bool, error) {
	k, err := scan(s.pool.QueryRow(ctx, `UPDATE cmd.listen_keys SET `+set+`
		WHERE api_key_id = $1 AND deleted_at IS NULL AND expires_at > $3 AND ($2 = '' OR listen_key = $2)
		RETURNING `+columns, apiKeyID, listenKey, now, at))
	return postgres.Found(k, err, "listenkeys: update")
}

// Get reads one listen key, active or not.
func (s *Store) Get(ctx context.Context, listenKey string) (query.ListenKey, bool, error) {
	k, err := scan(s.pool.QueryRow(ctx, `SELECT `+columns+` FROM cmd.listen_keys WHERE listen_key = $1`, listenKey))
	return postgres.Found(k, err, "listenkeys: get")
}
