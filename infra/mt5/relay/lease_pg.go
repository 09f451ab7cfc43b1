package relay

import (
	"context"
	"errors"
	"fmt"
	"time"
	"tradesvc/infra/postgres"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// LeaseName is the lease of the deployment's trade server: its cursors (CursorFacts,
// CursorTicks) are per deployment too, so one name is one trade server.
const LeaseName = "mt5"

// PGLease is the relay lease in cmd.relay_leases: one row per trade server with its owner,
// its fencing token and its expiry. Expiry is decided on Postgres' clock, so relays on
// machines whose clocks disagree still agree on who holds it.
type PGLease struct {
	pool *pgxpool.Pool
	name string
}

// NewPGLease builds the lease named name (LeaseName for the deployment's trade server).
func NewPGLease(pool *pgxpool.Pool, name string) (*PGLease, error) {
	if pool == nil || name == "" {
		return nil, errors.New("relay: the lease needs a pool and a name")
	}
	return &PGLease{pool: pool, name: name}, nil
}

// Acquire takes the lease for owner for ttl when it is free (never held, expired or
// released) or already owner's, with a new token; held is false while another owner's
// lease is live.
func (l *PGLease) Acquire(ctx context.Context, owner string, ttl time.Duration) (token int64, held bool, err error) {
	err = l.pool.QueryRow(ctx, `INSERT INTO cmd.relay_leases AS l (name, owner, token, expires_at, acquired_at)
		VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond', now())
		ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, token = l.token + 1,
			expires_at = EXCLUDED.expires_at, acquired_at = now()
		WHERE l.expires_at <= now() OR l.owner = EXCLUDED.owner
		RETURNING token`, l.name, owner, ttl.Milliseconds()).Scan(&token)
	return postgres.Found(token, err, "acquire the relay lease")
}

// Renew extends owner's lease under token by ttl from now; false when the token is no
// longer current (another relay took the lease over).
func (l *PGLease) Renew(ctx context.Context, owner string, token int64, ttl time.Duration) (bool, error) {
	tag, err := l.pool.Exec(ctx, `UPDATE cmd.relay_leases SET expires_at = now() + $4 * interval '1 millisecond'
		WHERE name = $1 AND owner = $2 AND token = $3`, l.name, owner, token, ttl.Milliseconds())
	if err != nil {
		return false, fmt.Errorf("renew the relay lease: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// Release gives up owner's lease under token at once, so that a standby takes over at its
// next attempt instead of after the expiry.
func (l *PGLease) Release(ctx context.Context, owner string, token int64) error {
	_, err := l.pool.Exec(ctx, `UPDATE cmd.relay_leases SET expires_at = now()
		WHERE name = $1 AND owner = $2 AND token = $3`, l.name, owner, token)
	if err != nil {
		return fmt.Errorf("release the relay lease: %w", err)
	}
	return nil
}

// Holder reads who holds the lease: its owner and token, and whether it is live (not
// expired). A lease never taken has an empty owner.
func (l *PGLease) Holder(ctx context.Context) (Holder, error) {
	var h Holder
	err := l.pool.QueryRow(ctx, `SELECT owner, token, expires_at > now(), expires_at FROM cmd.relay_leases WHERE name = $1`,
		l.name).Scan(&h.Owner, &h.Token, &h.Live, &h.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Holder{}, nil
	}
	if err != nil {
		return Holder{}, fmt.Errorf("read the relay lease: %w", err)
	}
	return h, nil
}

// Holder is the lease's state as one read saw it.
type Holder struct {
	Owner     string    `json:"owner"`
	Token     int64     `json:"token"`
	Live      bool      `json:"live"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// FencedSave stores the position of feed name like PGCursors.Save, but only while lease
// still carries token: the lease row is read FOR SHARE in the same statement, so a takeover
// either waits for this save or refuses it. ErrFenced when the token is no longer current.
func (c *PGCursors) FencedSave(ctx context.Context, lease string, token int64, name string, position uint64) error {
	tag, err := c.pool.Exec(ctx, `WITH fence AS (
			SELECT token FROM cmd.relay_leases WHERE name = $3 AND token = $4 FOR SHARE)
		INSERT INTO cmd.relay_cursors (name, position, updated_at) SELECT $1, $2, now() FROM fence
		ON CONFLICT (name) DO UPDATE SET position = greatest(cmd.relay_cursors.position, EXCLUDED.position), updated_at = now()`,
		name, int64(position), lease, token)
	if err != nil {
		return fmt.Errorf("save cursor %s: %w", name, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("save cursor %s under token %d: %w", name, token, ErrFenced)
	}
	return nil
}
