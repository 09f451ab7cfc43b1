package main

import (
	"context"
	"errors"
	"flag"
	"io"

	"tradesvc/cmd/tradesvc/app"
)

// replay rebuilds one read model from the Kafka log.
func replay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var name string
	cfg, err := loadConfig("replay", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&name, "projection", "", "projection to rebuild: "+app.ProjectionNames())
	})
	if err != nil {
		return err
	}
	if name == "" {
		return errors.New("--projection is required (" + app.ProjectionNames() + ")")
	}
	n, err := app.Replay(ctx, cfg, newLogger(cfg, stderr), name)
	if err != nil {
		return err
	}
	return printJSON(stdout, map[string]any{"projection": name, "eventsApplied": n})
}
