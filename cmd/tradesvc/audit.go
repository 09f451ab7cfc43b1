package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/projections/audit"
)

// auditCommand prints the story of each operation the flags name, read from the Kafka log:
// a table for people, or one JSON object per operation with --json. A story with a missing
// step is printed in full and makes the exit status 1, as does finding no operation.
func auditCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var q audit.Query
	var from, to string
	var jsonLines bool
	cfg, err := loadConfig("audit", args, stderr, func(fs *flag.FlagSet) {
		fs.Int64Var(&q.Login, "login", 0, "the account (with --client-order-id; narrows the other searches)")
		fs.StringVar(&q.ClientOrderID, "client-order-id", "", "the client's newClientOrderId (needs --login)")
		fs.Int64Var(&q.OrderID, "order", 0, "an order ticket: every operation that placed, changed or filled it")
		fs.Int64Var(&q.PositionID, "position", 0, "a position ticket: every operation that opened, changed or closed it")
		fs.StringVar(&from, "from", "", "start of a time range of appended commands (RFC 3339 or Unix ms)")
		fs.StringVar(&to, "to", "", "end of the time range (RFC 3339 or Unix ms; default: now)")
		fs.BoolVar(&jsonLines, "json", false, "one JSON object per operation instead of a table")
	})
	if err != nil {
		return err
	}
	if q.From, err = parseWhen(from); err != nil {
		return fmt.Errorf("--from: %w", err)
	}
	if q.To, err = parseWhen(to); err != nil {
		return fmt.Errorf("--to: %w", err)
	}
	if err := q.Validate(); err != nil {
		return err
	}
	res, err := app.Audit(ctx, cfg, q)
	if err != nil {
		return err
	}
	if len(res.Stories) == 0 {
		return errors.New("no operation in the log matches")
	}
	if jsonLines {
		err = audit.WriteJSONLines(stdout, res.Stories)
	} else {
		err = audit.WriteTable(stdout, res.Stories)
		switch {
		case res.PositionsError != "":
			fmt.Fprintf(stdout, "\napplied: unknown (%s)\n", res.PositionsError)
		default:
			fmt.Fprintf(stdout, "\napplied: by projection.trading, per its stored positions (%s)\n", res.PositionsFrom)
		}
		if !res.ReadModel {
			fmt.Fprintln(stdout, "read model: Postgres did not answer; the story is from the log alone")
		}
	}
	if err != nil {
		return err
	}
	incomplete := 0
	for _, s := range res.Stories {
		if !s.Complete {
			incomplete++
		}
	}
	if incomplete > 0 {
		return fmt.Errorf("%d of %d stories are incomplete (see MISSING / \"missing\")", incomplete, len(res.Stories))
	}
	return nil
}

// parseWhen reads RFC 3339 or Unix milliseconds; empty is the zero time.
func parseWhen(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
