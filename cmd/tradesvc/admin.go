package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"time"

	"tradesvc/command"
	"tradesvc/infra/postgres"
)

// adminCommand handles `tradesvc admin trading --on|--off`.
func adminCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "trading" {
		return errors.New("usage: tradesvc admin trading --on | --off")
	}
	var on, off bool
	cfg, err := loadConfig("admin trading", args[1:], stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&on, "on", false, "switch trading on")
		fs.BoolVar(&off, "off", false, "switch trading off (TRADE endpoints answer -1017)")
	})
	if err != nil {
		return err
	}
	if on == off {
		return errors.New("give exactly one of --on and --off")
	}
	pool, err := postgres.Open(ctx, postgres.Config{URL: cfg.PGURL, MaxConns: 1})
	if err != nil {
		return err
	}
	defer pool.Close()
	sw, err := command.NewSwitches(pool, time.Now)
	if err != nil {
		return err
	}
	if err := sw.SetTrading(ctx, on); err != nil {
		return err
	}
	state := "off"
	if on {
		state = "on"
	}
	return printJSON(stdout, map[string]string{"trading": state})
}
