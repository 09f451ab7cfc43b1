package command

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"tradesvc/events/trading"

	"github.com/jackc/pgx/v5/pgxpool"
)

// tagBlock is how many tags one nextval of cmd.tag_seq reserves (its INCREMENT BY).
const tagBlock = 1024

// Tags hands out correlation tags that no other operation has: numbers from the Postgres
// sequence cmd.tag_seq, reserved a block at a time, written as '#' and six base-62 digits.
type Tags struct {
	pool *pgxpool.Pool

	mu        sync.Mutex
	next, end int64
}

// NewTags builds the allocator.
func NewTags(pool *pgxpool.Pool) (*Tags, error) {
	if pool == nil {
		return nil, errors.New("command: tags need a pool")
	}
	return &Tags{pool: pool}, nil
}

// Next returns a fresh tag.
func (t *Tags) Next(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.next == t.end {
		var start int64
		if err := t.pool.QueryRow(ctx, `SELECT nextval('cmd.tag_seq')`).Scan(&start); err != nil {
			return "", fmt.Errorf("reserve correlation tags: %w", err)
		}
		t.next, t.end = start, min(start+tagBlock, trading.TagSpace)
	}
	n := t.next
	t.next++
	return trading.FormatTag(n), nil
}
