package projections

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeTx is a transaction whose BEGIN travels in its first pipeline and whose COMMIT in its
// last: a transaction of two pipelines costs two round trips, not four. Its connection is
// held from beginPipe to close.
type pipeTx struct {
	conn  *pgxpool.Conn
	begun bool
	ended bool
}

// errRolledBack: Postgres answered the COMMIT with ROLLBACK (the transaction had failed).
var errRolledBack = errors.New("projections: the transaction was rolled back")

func beginPipe(ctx context.Context, pool *pgxpool.Pool) (*pipeTx, error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return &pipeTx{conn: conn}, nil
}

// Query runs a query in the transaction (beginning it first when nothing was sent yet).
func (p *pipeTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if !p.begun {
		if _, err := p.conn.Exec(ctx, "BEGIN"); err != nil {
			return nil, err
		}
		p.begun = true
	}
	return p.conn.Query(ctx, sql, args...)
}

// send runs b in the transaction, prefixed with BEGIN when it is the first thing sent.
func (p *pipeTx) send(ctx context.Context, b *pgx.Batch) error {
	if !p.begun {
		b = prefixed(b, "BEGIN")
		p.begun = true
	}
	return p.conn.SendBatch(ctx, b).Close()
}

// commit runs b and COMMIT in one pipeline. A failure that Postgres reported (a statement's
// error, a COMMIT answered ROLLBACK) means nothing was committed; any other failure (the
// connection broke) leaves the outcome unknown: a commitError.
func (p *pipeTx) commit(ctx context.Context, b *pgx.Batch) error {
	if !p.begun {
		b = prefixed(b, "BEGIN")
		p.begun = true
	}
	var tag pgconn.CommandTag
	b.Queue("COMMIT").Exec(func(ct pgconn.CommandTag) error {
		tag = ct
		return nil
	})
	err := p.conn.SendBatch(ctx, b).Close()
	var pgErr *pgconn.PgError
	switch {
	case err == nil && tag.String() == "COMMIT":
		p.ended = true
		return nil
	case err == nil:
		return errRolledBack
	case errors.As(err, &pgErr):
		return err
	default:
		p.ended = true // whatever happened, the connection is not reused (close)
		return &commitError{err}
	}
}

// close ends the transaction (ROLLBACK unless it committed) and gives the connection back; a
// connection left in a transaction or broken is destroyed by the pool instead of reused.
func (p *pipeTx) close(ctx context.Context) {
	if p.begun && !p.ended {
		_, _ = p.conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	p.conn.Release()
}

// prefixed returns b with sql queued before its statements.
func prefixed(b *pgx.Batch, sql string) *pgx.Batch {
	out := &pgx.Batch{}
	out.Queue(sql)
	out.QueuedQueries = append(out.QueuedQueries, b.QueuedQueries...)
	return out
}
