package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"tradesvc/infra/mt5"
)

// Default client timeouts.
const (
	// DefaultCallTimeout bounds every call but the long polls, on top of the caller's context.
	DefaultCallTimeout = 30 * time.Second
	// pollSlack is how much longer than the poll's own wait the client waits for its answer.
	pollSlack = 10 * time.Second
)

// ClientConfig configures NewClient.
type ClientConfig struct {
	// Addr is the server's address: "127.0.0.1:8444" or a base URL "http://127.0.0.1:8444".
	Addr string
	// Token is the bearer token (LoadOrCreateToken / ReadToken on the run dir's sim.token).
	Token string
	// HTTPClient is used for every call; nil builds one with keep-alive connections and no
	// proxy. Its Timeout must be zero or longer than PollWait plus a margin: the client
	// bounds each call itself through its context.
	HTTPClient *http.Client
	// CallTimeout bounds each call but the long polls (default DefaultCallTimeout).
	CallTimeout time.Duration
	// PollWait is the server-side wait of one long poll of Facts/Ticks (default
	// DefaultPollWait, at most MaxPollWait).
	PollWait time.Duration
}

// Validate reports a missing address or token and out-of-range durations.
func (c ClientConfig) Validate() error {
	if strings.TrimSpace(c.Addr) == "" {
		return errors.New("remote: ClientConfig.Addr is empty")
	}
	if strings.TrimSpace(c.Token) == "" {
		return errors.New("remote: ClientConfig.Token is empty")
	}
	if c.CallTimeout < 0 || c.PollWait < 0 || c.PollWait > MaxPollWait {
		return fmt.Errorf("remote: ClientConfig timeouts out of range (call %v, poll %v, poll max %v)", c.CallTimeout, c.PollWait, MaxPollWait)
	}
	return nil
}

// Client implements mt5.TradeServer (and, through Admin methods, the simulator's admin
// hooks) against a remote Server. It is safe for concurrent use.
type Client struct {
	base        string
	auth        string
	hc          *http.Client
	callTimeout time.Duration
	pollWait    time.Duration
}

var _ mt5.TradeServer = (*Client)(nil)

// NewClient returns a client for the server at cfg.Addr. It does not connect until the
// first call.
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	base := strings.TrimRight(cfg.Addr, "/")
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: newTransport()}
	}
	c := &Client{
		base:        base,
		auth:        "Bearer " + strings.TrimSpace(cfg.Token),
		hc:          hc,
		callTimeout: cfg.CallTimeout,
		pollWait:    cfg.PollWait,
	}
	if c.callTimeout == 0 {
		c.callTimeout = DefaultCallTimeout
	}
	if c.pollWait == 0 {
		c.pollWait = DefaultPollWait
	}
	return c, nil
}

// newTransport is a keep-alive transport for a loopback peer: no proxy (a loopback
// address must never leave the host), short dials, a pool sized for the executor's
// concurrent calls plus the two long polls.
func newTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 nil,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     false,
	}
}

// Close releases idle connections. The client stays usable (it reconnects on demand).
func (c *Client) Close() error {
	c.hc.CloseIdleConnections()
	return nil
}

// call POSTs in to path and decodes the answer into out. A non-2xx answer becomes a
// *RemoteError; a failure to get any answer becomes a transport error (see transportErr).
func (c *Client) call(ctx context.Context, timeout time.Duration, path string, in, out any) error {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("remote: %s: encode request: %w", path, err)
		}
	}
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("remote: %s: %w", path, err)
	}
	req.Header.Set("Authorization", c.auth)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportErr(ctx, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return c.transportErr(ctx, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var we wireError
		if jerr := json.Unmarshal(raw, &we); jerr != nil || we.Error == "" {
			// Not our server's error shape (a proxy, a crash page): say what came back.
			return &RemoteError{Status: resp.StatusCode, Code: codeInternal,
				Message: fmt.Sprintf("%s: HTTP %d: %.200s", path, resp.StatusCode, raw)}
		}
		return newRemoteError(resp.StatusCode, we)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &transportError{path: path, err: fmt.Errorf("decode answer: %w", err)}
	}
	return nil
}

// transportError is a call that got no usable answer from the server.
type transportError struct {
	path string
	err  error
}

func (e *transportError) Error() string {
	return "remote: " + e.path + ": no answer from the trade-server process: " + e.err.Error()
}

// Unwrap makes a transport failure errors.Is mt5.ErrDisconnected and its cause.
func (e *transportError) Unwrap() []error { return []error{mt5.ErrDisconnected, e.err} }

// transportErr explains a call that got no answer. The caller's own context ending comes
// back as that context's error; anything else (refused, reset, our own call timeout) wraps
// mt5.ErrDisconnected. Send rewraps it as mt5.ErrNoAnswer.
func (c *Client) transportErr(ctx context.Context, path string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("remote: %s: %w", path, context.Cause(ctx))
	}
	return &transportError{path: path, err: err}
}
