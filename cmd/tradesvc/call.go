package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"tradesvc/gateway/gwclient"
)

const callUsage = `usage: tradesvc call [flags] METHOD PATH [name=value ...]

Sends one REST request and prints the JSON answer. The key header is sent when the endpoint
needs it, and USER_DATA / TRADE requests are signed (timestamp from the server's clock, read
from GET /v1/time first, so -1021 never comes from a skewed local clock). GET and DELETE carry
the parameters in the query string, POST and PUT in a form body. On an error answer the
service's code and msg are printed on stderr and the exit status is 1.

Credentials and address: flags, else TRADESVC_BASE_URL, TRADESVC_API_KEY, TRADESVC_API_SECRET,
TRADESVC_CA_CERT, else the same names in RUN_DIR/env (written by make run).

example: tradesvc call GET /v1/account login=1001

flags:
`

// callClock is the local clock of `tradesvc call` (tests skew it).
var callClock = time.Now

// callSettings are where a call goes and with which key.
type callSettings struct {
	baseURL, apiKey, apiSecret, caCert string
}

// callCommand runs `tradesvc call` and returns the exit status.
func callCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tradesvc call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, callUsage); fs.PrintDefaults() }
	var flags callSettings
	var runDir string
	var recvWindow int64
	fs.StringVar(&flags.baseURL, "base-url", "", "service base URL (default $TRADESVC_BASE_URL, or RUN_DIR/env)")
	fs.StringVar(&flags.apiKey, "api-key", "", "API key (default $TRADESVC_API_KEY, or RUN_DIR/env)")
	fs.StringVar(&flags.apiSecret, "api-secret", "", "API secret (default $TRADESVC_API_SECRET, or RUN_DIR/env)")
	fs.StringVar(&flags.caCert, "ca-cert", "", "PEM of the CA to trust (default $TRADESVC_CA_CERT, or RUN_DIR/env; none: system roots)")
	fs.StringVar(&runDir, "run-dir", "", "directory holding the env file (default $TRADESVC_RUN_DIR, or .run)")
	fs.Int64Var(&recvWindow, "recv-window", 0, "recvWindow of a signed request in ms (default: the service's, 5000)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() < 2 {
		fs.Usage()
		return 2
	}
	method, path := strings.ToUpper(fs.Arg(0)), fs.Arg(1)
	params := url.Values{}
	for _, kv := range fs.Args()[2:] {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			fmt.Fprintf(stderr, "tradesvc call: parameter %q is not name=value\n", kv)
			return 2
		}
		params.Add(name, value)
	}
	set, err := callConfig(flags, runDir)
	if err == nil {
		err = call(ctx, set, recvWindow, method, path, params, stdout, stderr)
	}
	var rejected *callRejected
	switch {
	case errors.As(err, &rejected):
		fmt.Fprintf(stderr, "tradesvc call: %d %s (HTTP %d)\n", rejected.Code, rejected.Msg, rejected.Status)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "tradesvc call: %v\n", err)
		return 1
	}
	return 0
}

// callRejected is an error answer of the service: its envelope and HTTP status.
type callRejected struct {
	Status int
	gwclient.ErrorBody
}

func (e *callRejected) Error() string { return fmt.Sprintf("%d %s (HTTP %d)", e.Code, e.Msg, e.Status) }

// callConfig fills what the flags leave empty from the environment, then from RUN_DIR/env.
func callConfig(set callSettings, runDir string) (callSettings, error) {
	fill := func(lookup func(name string) string) {
		for _, v := range []struct {
			dst  *string
			name string
		}{
			{&set.baseURL, "TRADESVC_BASE_URL"}, {&set.apiKey, "TRADESVC_API_KEY"},
			{&set.apiSecret, "TRADESVC_API_SECRET"}, {&set.caCert, "TRADESVC_CA_CERT"},
		} {
			if *v.dst == "" {
				*v.dst = lookup(v.name)
			}
		}
	}
	fill(os.Getenv)
	if set.baseURL == "" || set.apiKey == "" || set.apiSecret == "" || set.caCert == "" {
		if runDir == "" {
			runDir = os.Getenv("TRADESVC_RUN_DIR")
		}
		if runDir == "" {
			runDir = ".run"
		}
		file := filepath.Join(runDir, "env")
		vars, err := readEnvFile(file)
		switch {
		case err == nil:
			fill(func(name string) string { return vars[name] })
		case !errors.Is(err, os.ErrNotExist):
			return set, err
		case set.baseURL == "":
			return set, fmt.Errorf("no base URL: set TRADESVC_BASE_URL or --base-url, or run `make run` (it writes %s)", file)
		}
	}
	if set.baseURL == "" {
		return set, errors.New("no base URL: set TRADESVC_BASE_URL or --base-url")
	}
	set.baseURL = strings.TrimRight(set.baseURL, "/")
	return set, nil
}

// readEnvFile reads the `export NAME='value'` lines of a file like .run/env.
func readEnvFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	vars := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if len(value) >= 2 && (value[0] == '\'' || value[0] == '"') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		vars[strings.TrimSpace(name)] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return vars, nil
}

// call sends one request the way the endpoint's security type says and prints the answer.
func call(ctx context.Context, set callSettings, recvWindow int64, method, path string, params url.Values,
	stdout, stderr io.Writer) error {
	var caPEM []byte
	if set.caCert != "" {
		b, err := os.ReadFile(set.caCert)
		if err != nil {
			return fmt.Errorf("CA certificate: %w", err)
		}
		caPEM = b
	}
	hc, err := gwclient.NewHTTPClient(caPEM, 1)
	if err != nil {
		return err
	}
	c := &gwclient.Client{BaseURL: set.baseURL, APIKey: set.apiKey, Secret: []byte(set.apiSecret), HTTP: hc,
		RecvWindow: recvWindow, Now: callClock}
	sec, known := gwclient.EndpointSecurity(method, path)
	if !known {
		sec = gwclient.SecMarketData // an unknown path: send the key, sign nothing
	}
	var res *gwclient.Response
	switch {
	case sec.Signed():
		if set.apiKey == "" || set.apiSecret == "" {
			return fmt.Errorf("%s %s is %s: it needs TRADESVC_API_KEY and TRADESVC_API_SECRET", method, path, sec)
		}
		offset, err := clockOffset(ctx, c)
		if err != nil {
			return err
		}
		c.Now = func() time.Time { return callClock().Add(offset) }
		placement := gwclient.InQuery
		if method == http.MethodPost || method == http.MethodPut {
			placement = gwclient.InBody
		}
		res, err = c.Signed(ctx, method, path, params, placement)
		if err != nil {
			return err
		}
	case sec.Keyed():
		if set.apiKey == "" {
			return fmt.Errorf("%s %s is %s: it needs TRADESVC_API_KEY", method, path, sec)
		}
		if res, err = c.Keyed(ctx, method, path, params); err != nil {
			return err
		}
	default:
		if res, err = c.Public(ctx, method, path, params); err != nil {
			return err
		}
	}
	printBody(stdout, res.Body)
	if res.Status >= 300 {
		if e, ok := res.Err(); ok {
			return &callRejected{Status: res.Status, ErrorBody: e}
		}
		return fmt.Errorf("HTTP %d", res.Status)
	}
	return nil
}

// clockOffset is the server clock minus the local one (gwclient.ClockOffset on callClock),
// so a signed timestamp is the server's time whatever the local clock.
func clockOffset(ctx context.Context, c *gwclient.Client) (time.Duration, error) {
	return gwclient.ClockOffset(ctx, c, callClock)
}

// printBody prints a JSON body indented (as received when it is not JSON).
func printBody(w io.Writer, body []byte) {
	var out bytes.Buffer
	if json.Indent(&out, body, "", "  ") != nil {
		out.Reset()
		out.Write(body)
	}
	out.WriteByte('\n')
	_, _ = w.Write(out.Bytes())
}
