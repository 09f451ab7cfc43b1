package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/infra/config"
)

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // config.Validate admits only the four names it reads
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
}

// serve runs the service until SIGINT/SIGTERM, then stops every role gracefully. It returns
// an error (the process exits non-zero) when a role could not go on, when the stop overran
// --shutdown-timeout, or when a resource could not be closed cleanly.
func serve(ctx context.Context, args []string, stderr io.Writer) (err error) {
	cfg, err := loadConfig("serve", args, stderr, nil)
	if err != nil {
		return err
	}
	log := newLogger(cfg, os.Stderr)
	slog.SetDefault(log)
	a, err := app.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := a.Close(); cerr != nil {
			log.Error("tradesvc closed with errors", "err", cerr)
			err = errors.Join(err, cerr)
		}
	}()
	if err := a.Run(ctx); err != nil {
		return fmt.Errorf("stopped with errors: %w", err)
	}
	log.Info("tradesvc stopped")
	return nil
}

// migrate applies the migrations and creates the topics, then prints what it did.
func migrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := loadConfig("migrate", args, stderr, nil)
	if err != nil {
		return err
	}
	if err := app.Migrate(ctx, cfg, newLogger(cfg, stderr)); err != nil {
		return err
	}
	return printJSON(stdout, map[string]string{"postgres": "migrated", "clickhouse": "migrated", "kafka": "topics ready"})
}
