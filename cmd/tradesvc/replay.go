package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/infra/config"
)

// replay rebuilds one read model from the Kafka log, or with --verify rebuilds the trading
// read models into a scratch database and compares them with the live ones.
func replay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var name string
	var check bool
	var opts app.VerifyOptions
	cfg, err := loadConfig("replay", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "projection", "", "projection to rebuild: "+app.ProjectionNames())
		fs.BoolVar(&check, "verify", false, "rebuild the trading read models into a scratch database up to the positions "+
			"the live projection stored and compare them row for row; exit 1 on any difference")
		fs.StringVar(&opts.ScratchURL, "scratch-url", "", "with --verify: the database to rebuild into (default: a new "+
			"<database>_verify_<time>, dropped afterwards)")
		fs.BoolVar(&opts.KeepScratch, "keep-scratch", false, "with --verify: keep the scratch database it created")
	})
	if err != nil {
		return err
	}
	if check {
		return verifyReplay(ctx, cfg, opts, stdout, stderr)
	}
	if name == "" {
		return errors.New("--projection is required (" + app.ProjectionNames() + "), or --verify")
	}
	n, err := app.Replay(ctx, cfg, newLogger(cfg, stderr), name)
	if err != nil {
		return err
	}
	return printJSON(stdout, map[string]any{"projection": name, "eventsApplied": n})
}

// verifyReplay prints the report as JSON on stdout and every difference as a line on stderr;
// any difference is an error (exit 1).
func verifyReplay(ctx context.Context, cfg config.Config, opts app.VerifyOptions, stdout, stderr io.Writer) error {
	rep, err := app.VerifyReplay(ctx, cfg, newLogger(cfg, stderr), opts)
	if err != nil {
		return err
	}
	if err := printJSON(stdout, rep); err != nil {
		return err
	}
	for _, d := range rep.Differences {
		fmt.Fprintln(stderr, d.String())
	}
	if !rep.Equal {
		return fmt.Errorf("%w: %d differences", app.ErrNotEqual, len(rep.Differences))
	}
	return nil
}
