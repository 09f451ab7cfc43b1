package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"tradesvc/cmd/tradesvc/app"
)

const dlqUsage = "usage: tradesvc dlq list [--all] | tradesvc dlq replay [--projection NAME]"

// dlqCommand handles `tradesvc dlq list` (the parked events still pending, or every one with
// --all) and `tradesvc dlq replay` (re-apply them through the projection that parked them,
// once their cause is fixed; see app.ReplayDeadLetters for what that does and why it is
// safe). Both print JSON; a replay that leaves events failing exits non-zero.
func dlqCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(dlqUsage)
	}
	switch args[0] {
	case "list":
		var all bool
		cfg, err := loadConfig("dlq list", args[1:], stderr, func(fs *flag.FlagSet) {
			fs.BoolVar(&all, "all", false, "also list the parked events already replayed")
		})
		if err != nil {
			return err
		}
		dls, err := app.ListDeadLetters(ctx, cfg, all)
		if err != nil {
			return err
		}
		pending := 0
		for _, dl := range dls {
			if !dl.Replayed {
				pending++
			}
		}
		return printJSON(stdout, map[string]any{"pending": pending, "deadLetters": dls})
	case "replay":
		var projection string
		cfg, err := loadConfig("dlq replay", args[1:], stderr, func(fs *flag.FlagSet) {
			fs.StringVar(&projection, "projection", "", "replay only what this projection parked: "+app.ProjectionNames())
		})
		if err != nil {
			return err
		}
		res, err := app.ReplayDeadLetters(ctx, cfg, newLogger(cfg, stderr), projection)
		if err != nil && len(res.Replayed)+len(res.Failed)+len(res.Skipped) == 0 {
			return err // nothing was done: nothing to print
		}
		if perr := printJSON(stdout, res); perr != nil {
			return errors.Join(err, perr)
		}
		if err != nil {
			return err
		}
		if len(res.Failed) > 0 {
			return fmt.Errorf("%d parked events could not be re-applied and stay parked (see \"failed\")", len(res.Failed))
		}
		return nil
	default:
		return errors.New(dlqUsage)
	}
}
