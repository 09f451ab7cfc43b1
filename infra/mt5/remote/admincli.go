package remote

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
)

// DefaultSimAddr is the simulator endpoint of `make run` (TRADESVC_SIM_LISTEN).
const DefaultSimAddr = "127.0.0.1:8444"

// Exit statuses of the admin CLI.
const (
	exitOK    = 0
	exitError = 1 // the command was valid but failed (refused, unreachable)
	exitUsage = 2 // bad arguments
)

const simUsage = `usage: tradesvc sim <command> [flags]

commands:
  quote   --symbol S --bid B --ask A     set S's quote now and hold it
  feed    --resume --symbol S            release S back to the quote generator
  deposit --login L --amount X           balance deal (negative X: withdrawal)
  account --login L [--trade-allowed=true|false]
                                         set (or show) the account's trading flag
  fault   --mode M [--latency D] [--answer-delay D] [--retcode N]
          M: none|no-answer|timeout|requote|disconnect|shortfalls|refuse|latency
          (--retcode goes with refuse; --latency, e.g. 200ms, is added to every send;
          --answer-delay, e.g. 3s, holds the answer of every executed send)
  logins                                 the trade server's logins
  state                                  the injected fault and the logins
`

// RunSimCommand runs `tradesvc sim ...` against the simulator endpoint at simAddr (empty:
// DefaultSimAddr), authenticating with the token in tokenPath. args are the words after
// "sim" (a leading "sim" is tolerated). It prints the resulting state as JSON on stdout and
// errors on stderr, and returns the exit status.
func RunSimCommand(ctx context.Context, simAddr, tokenPath string, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "sim" {
		args = args[1:]
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stderr, simUsage)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	if simAddr == "" {
		simAddr = DefaultSimAddr
	}
	tok, err := ReadToken(tokenPath)
	if err != nil {
		fmt.Fprintf(stderr, "tradesvc sim: %v (is the sim role running?)\n", err)
		return exitError
	}
	a, err := NewAdminClient(ClientConfig{Addr: simAddr, Token: tok})
	if err != nil {
		fmt.Fprintf(stderr, "tradesvc sim: %v\n", err)
		return exitError
	}
	defer a.c.Close()
	return RunAdminCLI(ctx, a, args, stdout, stderr)
}

// usageError marks argument problems (exit status 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// RunAdminCLI runs one admin command (args[0] is the command name) through a.
func RunAdminCLI(ctx context.Context, a *AdminClient, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, simUsage)
		return exitUsage
	}
	name := args[0]
	cmd, ok := adminCommands[name]
	if !ok {
		fmt.Fprintf(stderr, "tradesvc sim: unknown command %q\n%s", name, simUsage)
		return exitUsage
	}
	fs := flag.NewFlagSet("tradesvc sim "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	run := cmd(fs)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage // flag already printed the problem and the usage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tradesvc sim %s: unexpected argument %q (boolean flags take --flag=value)\n", name, fs.Arg(0))
		return exitUsage
	}
	out, err := run(ctx, a)
	if err != nil {
		fmt.Fprintf(stderr, "tradesvc sim %s: %v\n", name, err)
		var ue *usageError
		if errors.As(err, &ue) {
			return exitUsage
		}
		return exitError
	}
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "tradesvc sim %s: write: %v\n", name, err)
		return exitError
	}
	return exitOK
}

// adminCommand declares its flags on fs and returns the action to run once they are parsed.
type adminCommand func(fs *flag.FlagSet) func(ctx context.Context, a *AdminClient) (any, error)

var adminCommands = map[string]adminCommand{
	"quote":   quoteCmd,
	"feed":    feedCmd,
	"deposit": depositCmd,
	"account": accountCmd,
	"fault":   faultCmd,
	"logins":  loginsCmd,
	"state":   stateCmd,
}

func quoteCmd(fs *flag.FlagSet) func(context.Context, *AdminClient) (any, error) {
	symbol := fs.String("symbol", "", "symbol name (required)")
	bidS := fs.String("bid", "", "bid price, plain decimal (required)")
	askS := fs.String("ask", "", "ask price, plain decimal (required)")
	return func(ctx context.Context, a *AdminClient) (any, error) {
		if *symbol == "" {
			return nil, usagef("--symbol is required")
		}
		bid, err := positive("--bid", *bidS)
		if err != nil {
			return nil, err
		}
		ask, err := positive("--ask", *askS)
		if err != nil {
			return nil, err
		}
		if bid.Cmp(&ask) > 0 {
			return nil, usagef("--bid %s is above --ask %s", *bidS, *askS)
		}
		st, err := a.SetQuote(ctx, *symbol, bid, ask)
		return &st, err
	}
}

func feedCmd(fs *flag.FlagSet) func(context.Context, *AdminClient) (any, error) {
	resume := fs.Bool("resume", false, "release the symbol back to the quote generator (required)")
	symbol := fs.String("symbol", "", "symbol name (required)")
	return func(ctx context.Context, a *AdminClient) (any, error) {
		if !*resume {
			return nil, usagef("--resume is required (the only feed action)")
		}
		if *symbol == "" {
			return nil, usagef("--symbol is required")
		}
		st, err := a.ResumeFeed(ctx, *symbol)
		return &st, err
	}
}

func depositCmd(fs *flag.FlagSet) func(context.Context, *AdminClient) (any, error) {
	login := fs.Int64("login", 0, "account login (required)")
	amountS := fs.String("amount", "", "amount in the deposit currency, plain decimal; negative withdraws (required)")
	return func(ctx context.Context, a *AdminClient) (any, error) {
		if *login <= 0 {
			return nil, usagef("--login must be a positive login")
		}
		if *amountS == "" {
			return nil, usagef("--amount is required")
		}
		amount, err := dec.Parse(*amountS)
		if err != nil {
			return nil, usagef("--amount: %v", err)
		}
		if amount.IsZero() {
			return nil, usagef("--amount must not be zero")
		}
		res, err := a.Deposit(ctx, *login, amount)
		return &res, err
	}
}

func accountCmd(fs *flag.FlagSet) func(context.Context, *AdminClient) (any, error) {
	login := fs.Int64("login", 0, "account login (required)")
	var allowed *bool
	fs.Func("trade-allowed", "true or false: switch trading on or off for the account", func(s string) error {
		v, err := parseBool(s)
		if err != nil {
			return err
		}
		allowed = &v
		return nil
	})
	return func(ctx context.Context, a *AdminClient) (any, error) {
		if *login <= 0 {
			return nil, usagef("--login must be a positive login")
		}
		var st AccountState
		var err error
		if allowed == nil {
			st, err = a.Account(ctx, *login)
		} else {
			st, err = a.SetAccountTradeAllowed(ctx, *login, *allowed)
		}
		return &st, err
	}
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("want true or false, got %q", s)
}

// faultModes are the modes the CLI accepts (the simulator's own names).
var faultModes = []string{"none", "no-answer", "timeout", "requote", "disconnect", "shortfalls", "refuse", "latency"}

func faultCmd(fs *flag.FlagSet) func(context.Context, *AdminClient) (any, error) {
	mode := fs.String("mode", "", strings.Join(faultModes, "|")+" (required)")
	latency := fs.Duration("latency", 0, "delay added before every send, e.g. 200ms")
	answerDelay := fs.Duration("answer-delay", 0, "delay between executing a send and answering it, e.g. 3s")
	retcode := fs.Int("retcode", 0, "refusal return code for --mode refuse (10004..10046)")
	return func(ctx context.Context, a *AdminClient) (any, error) {
		known := false
		for _, m := range faultModes {
			known = known || m == *mode
		}
		if !known {
			return nil, usagef("--mode must be one of %s, got %q", strings.Join(faultModes, "|"), *mode)
		}
		if *latency < 0 {
			return nil, usagef("--latency must not be negative")
		}
		if *latency%time.Millisecond != 0 {
			return nil, usagef("--latency has whole milliseconds only, got %v", *latency)
		}
		if *answerDelay < 0 {
			return nil, usagef("--answer-delay must not be negative")
		}
		if *answerDelay%time.Millisecond != 0 {
			return nil, usagef("--answer-delay has whole milliseconds only, got %v", *answerDelay)
		}
		if *mode == "refuse" && *retcode == 0 {
			return nil, usagef("--mode refuse needs --retcode N")
		}
		if *mode != "refuse" && *retcode != 0 {
			return nil, usagef("--retcode goes with --mode refuse only")
		}
		st, err := a.SetFault(ctx, FaultState{Mode: *mode, LatencyMs: latency.Milliseconds(),
			AnswerDelayMs: answerDelay.Milliseconds(), Retcode: *retcode})
		return &st, err
	}
}

func loginsCmd(fs *flag.FlagSet) func(context.Context, *AdminClient) (any, error) {
	return func(ctx context.Context, a *AdminClient) (any, error) {
		logins, err := a.Logins(ctx)
		return &LoginsResult{Logins: logins}, err
	}
}

func stateCmd(fs *flag.FlagSet) func(context.Context, *AdminClient) (any, error) {
	return func(ctx context.Context, a *AdminClient) (any, error) {
		st, err := a.State(ctx)
		return &st, err
	}
}

// positive parses a strictly positive plain decimal (a price).
func positive(name, s string) (apd.Decimal, error) {
	if s == "" {
		return apd.Decimal{}, usagef("%s is required", name)
	}
	d, err := dec.Parse(s)
	if err != nil {
		return d, usagef("%s: %v", name, err)
	}
	if d.Sign() <= 0 {
		return d, usagef("%s must be positive, got %s", name, s)
	}
	return d, nil
}
