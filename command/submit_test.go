package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"tradesvc/events"
)

// A request whose idempotency records could not be stored is told what was done: nothing
// (-1000) when Postgres was never reached, unknown (-5009: retry with the same id) when it went
// away under the statement, and an internal error when it refused the statement itself.
func TestRecordFailedTellsWhatWasDone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A real refused connection (nothing listens on port 1).
	_, refused := pgconn.Connect(ctx, "postgres://tradesvc@127.0.0.1:1/tradesvc?sslmode=disable&connect_timeout=5")
	var connErr *pgconn.ConnectError
	if !errors.As(refused, &connErr) {
		t.Fatalf("connecting to a closed port gave %T %v, want a *pgconn.ConnectError", refused, refused)
	}
	wrap := func(err error) error { return fmt.Errorf("insert idempotency records: %w", err) }
	refusedStatement := &pgconn.PgError{Code: "23514", Message: "check constraint"}
	for _, c := range []struct {
		name string
		err  error
		want events.Code // 0: the error itself
	}{
		{"connection refused", wrap(refused), events.CodeUnavailable},
		{"postmaster gone (57P01)", wrap(&pgconn.PgError{Code: "57P01"}), events.CodeStatusUnknown},
		{"crash shutdown (57P02)", wrap(&pgconn.PgError{Code: "57P02"}), events.CodeStatusUnknown},
		{"connection lost mid-statement", wrap(io.ErrUnexpectedEOF), events.CodeStatusUnknown},
		{"a refused statement", wrap(refusedStatement), 0},
	} {
		got := recordFailed(ctx, c.err)
		var rej *events.Rejection
		switch {
		case c.want == 0 && got != c.err:
			t.Errorf("%s: %v, want the error itself", c.name, got)
		case c.want != 0 && (!errors.As(got, &rej) || rej.Code != c.want):
			t.Errorf("%s: %v, want code %d", c.name, got, c.want)
		}
	}
	ended, stop := context.WithCancel(ctx)
	stop()
	if err := wrap(refused); recordFailed(ended, err) != err {
		t.Error("a request whose context ended keeps its error")
	}
}
