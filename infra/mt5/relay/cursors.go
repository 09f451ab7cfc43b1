package relay

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PGCursors keeps relay cursors in cmd.relay_cursors.
type PGCursors struct{ pool *pgxpool.Pool }

// NewPGCursors builds the store.
func NewPGCursors(pool *pgxpool.Pool) (*PGCursors, error) {
	if pool == nil {
		return nil, errors.New("relay: cursor store needs a pool")
	}
	return &PGCursors{pool: pool}, nil
}

// Load returns the saved position of feed name, 0 when none was saved.
func (c *PGCursors) Load(ctx context.Context, name string) (uint64, error) {
	var pos int64
	err := c.pool.QueryRow(ctx, `SELECT position FROM cmd.relay_cursors WHERE name = $1`, name).Scan(&pos)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("load cursor %s: %w", name, err)
	}
	return uint64(pos), nil
}

// Save stores the position of feed name; it never moves a cursor backwards.
func (c *PGCursors) Save(ctx context.Context, name string, position uint64) error {
	_, err := c.pool.Exec(ctx, `INSERT INTO cmd.relay_cursors (name, position, updated_at) VALUES ($1, $2, now())
		ON CONFLICT (name) DO UPDATE SET position = greatest(cmd.relay_cursors.position, EXCLUDED.position), updated_at = now()`,
		name, int64(position))
	if err != nil {
		return fmt.Errorf("save cursor %s: %w", name, err)
	}
	return nil
}
