package postgres

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Found reads the outcome of a single-row query the way the stores answer it: the row and
// true, or false when there is none (pgx.ErrNoRows is an answer, not a failure), or the
// failure wrapped with what was being done.
func Found[T any](row T, err error, what string) (T, bool, error) {
	var zero T
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return zero, false, nil
	case err != nil:
		return zero, false, fmt.Errorf("%s: %w", what, err)
	}
	return row, true, nil
}
