package bench

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/gateway/gwclient"
	"tradesvc/infra/kafka"
)

// Env is what a run needs from outside: where the service is, the stores of its floor (the
// service's own configuration), and the admin paths that issue keys and fund logins.
type Env struct {
	// BaseURL is like https://127.0.0.1:8443; CAPEM the CA that signed its certificate (nil:
	// the system's roots).
	BaseURL string
	CAPEM   []byte
	// Kafka and PGURL are the service's Kafka and Postgres (for the floor).
	Kafka kafka.Config
	PGURL string
	// CreateKey issues a trading key scoped to logins (`tradesvc keys create`); nil when keys
	// cannot be created here.
	CreateKey func(ctx context.Context, logins []int64) (Key, error)
	// Deposit credits amount to login on the trade server (`tradesvc sim deposit`); nil when
	// logins cannot be funded here.
	Deposit func(ctx context.Context, login int64, amount apd.Decimal) error
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// runner holds one run's shared state.
type runner struct {
	env Env
	o   Options
	hc  *http.Client
	// slots holds one token per connection of hc's pool (--conns): an order takes one before
	// it is signed, so that its timestamp is its send's, not the start of its wait for a
	// connection (a wait of more than its recvWindow would earn -1021 from the client's own
	// queue, not the service's).
	slots chan struct{}
	tls   *tls.Config
	now   func() time.Time // the server's clock
	id    string
	logw  io.Writer
	logm  sync.Mutex

	agents     []*agent
	createAuto bool
	created    int
	ready      map[int64]bool // logins whose account answered
	deals      *dealBook
	streams    *streamGroup

	seqMu sync.Mutex
	seq   int
}

// Run runs one scenario and returns its report. The error is for a run that could not be
// done; a run that lost orders returns its report with OK false.
func Run(ctx context.Context, env Env, o Options) (*Report, error) {
	if err := o.Normalize(); err != nil {
		return nil, err
	}
	r, err := newRunner(env, o)
	if err != nil {
		return nil, err
	}
	defer r.close()
	rep := &Report{Tool: "tradesvc bench", Scenario: o.Scenario, RunID: r.id, StartedAt: time.Now().UnixMilli(),
		BaseURL: env.BaseURL, Settings: Settings{Symbol: o.Symbol, Side: o.Side, Volume: o.Volume, Conns: o.Conns,
			KeyUsage: o.KeyUsage, RecvWindow: o.RecvWindow, Streams: o.Streams && o.Scenario != ScenarioResult}}
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	if o.Floor {
		var gap time.Duration
		if o.Scenario == ScenarioResult {
			gap = floorGap(o.Rate)
		}
		if gap > 0 {
			r.logf("measuring the floor (%d samples of each part, back to back, then one every %v)", o.FloorSamples, gap)
		} else {
			r.logf("measuring the floor (%d samples of each part)", o.FloorSamples)
		}
		f, err := r.floor(ctx, gap)
		if err != nil {
			return nil, fmt.Errorf("floor: %w", err)
		}
		rep.Floor = f
	}
	var acked, inDoubt []*orderRec
	switch o.Scenario {
	case ScenarioResult, ScenarioAck:
		acked, inDoubt, err = r.fixedRate(ctx, rep)
	case ScenarioSustain:
		acked, inDoubt, err = r.sustainOnly(ctx, rep)
	case ScenarioOverload:
		acked, inDoubt, err = r.overload(ctx, rep)
	}
	if err != nil {
		return nil, err
	}
	if o.Verify {
		r.logf("verifying %d acknowledged orders through GET /v1/order", len(acked))
		v := r.verify(ctx, acked, inDoubt)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		rep.Verify = &v
	}
	rep.Keys = r.keysUsed()
	if o.KeysOut != "" {
		if err := WriteKeysFile(o.KeysOut, r.keys()); err != nil {
			return nil, fmt.Errorf("--keys-out: %w", err)
		}
	}
	rep.FinishedAt = time.Now().UnixMilli()
	rep.settle()
	return rep, nil
}

func newRunner(env Env, o Options) (*runner, error) {
	if env.BaseURL == "" {
		return nil, errors.New("no base URL")
	}
	hc, err := gwclient.NewHTTPClient(env.CAPEM, o.Conns)
	if err != nil {
		return nil, err
	}
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if env.CAPEM != nil {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(env.CAPEM)
		tlsCfg.RootCAs = pool
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	logw := env.Log
	if logw == nil {
		logw = io.Discard
	}
	r := &runner{env: env, o: o, hc: hc, slots: make(chan struct{}, o.Conns), tls: tlsCfg, now: time.Now,
		id: hex.EncodeToString(b[:]), logw: logw, deals: newDealBook(), ready: map[int64]bool{}}
	r.streams = newStreamGroup(r)
	return r, nil
}

func (r *runner) close() {
	r.streams.close()
	r.hc.CloseIdleConnections()
}

func (r *runner) logf(format string, args ...any) {
	r.logm.Lock()
	defer r.logm.Unlock()
	fmt.Fprintf(r.logw, "[bench %s] %s\n", time.Now().UTC().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// setUp reads the server's clock, loads and creates keys, and funds the logins.
func (r *runner) setUp(ctx context.Context) error {
	probe := &gwclient.Client{BaseURL: r.env.BaseURL, HTTP: r.hc}
	offset, err := gwclient.ClockOffset(ctx, probe, time.Now)
	if err != nil {
		return fmt.Errorf("the service does not answer: %w", err)
	}
	r.now = func() time.Time { return time.Now().Add(offset) }
	var keys []Key
	if r.o.KeysFile != "" {
		if keys, err = ReadKeysFile(r.o.KeysFile); err != nil {
			return err
		}
	}
	n, auto, _ := r.o.CreateCount()
	r.createAuto = auto
	if (n > 0 || auto) && r.env.CreateKey == nil {
		return errors.New("--create-keys: keys cannot be created from here")
	}
	for _, k := range keys {
		r.addAgent(k)
	}
	for range n {
		if _, err := r.createAgent(ctx); err != nil {
			return err
		}
	}
	if len(r.agents) == 0 && !auto {
		return errors.New("no API keys: pass --keys FILE and/or --create-keys N|auto")
	}
	if r.o.Fund != "" {
		if err := r.fund(ctx); err != nil {
			return err
		}
	}
	return nil
}

// nextIDs reserves n client order ids, unique to this run.
func (r *runner) nextIDs(n int) int {
	r.seqMu.Lock()
	defer r.seqMu.Unlock()
	first := r.seq
	r.seq += n
	return first
}

// clientOrderID names order seq of this run: at most 36 characters of the allowed set.
func clientOrderID(runID string, seq int) string { return fmt.Sprintf("bn-%s-%d", runID, seq) }

func joinLogins(ls []int64) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = fmt.Sprint(l)
	}
	return strings.Join(parts, ",")
}
