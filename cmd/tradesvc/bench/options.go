package bench

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"tradesvc/events/dec"
)

// Scenarios `tradesvc bench` runs.
const (
	ScenarioResult   = "result"
	ScenarioAck      = "ack"
	ScenarioOverload = "overload"
	ScenarioSustain  = "sustain"
)

// Scenarios lists them in the order the usage text gives.
func Scenarios() []string {
	return []string{ScenarioResult, ScenarioAck, ScenarioSustain, ScenarioOverload}
}

// Options are the settings of one run. Register gives each a flag and its default; zero
// values of Rate and Duration mean the scenario's default (DefaultRate, DefaultDuration).
type Options struct {
	Scenario string

	// BaseURL and CACert locate the service (empty: resolved by the caller from the service's
	// configuration).
	BaseURL string
	CACert  string

	// The load.
	Rate     float64
	Duration time.Duration
	Symbol   string
	Volume   string
	Side     string
	Conns    int
	// RecvWindow of every signed request in ms; 0 sends none (the service's 5000).
	RecvWindow int64

	// Keys.
	KeysFile     string
	CreateKeys   string // "", a number, or "auto"
	KeysOut      string
	Logins       []int64
	LoginsPerKey int
	// KeyUsage is the fraction of each key's order and weight budgets the load may use.
	KeyUsage float64
	// Fund is deposited on every login the keys trade before the load ("" none).
	Fund string

	// Measurements.
	Floor        bool
	FloorSamples int
	Streams      bool
	// StreamKeys limits the streams to the first keys (0: every key's).
	StreamKeys int
	// Settle bounds the wait for the DEAL frames of acknowledged orders after the load.
	Settle time.Duration
	Verify bool
	// VerifyTimeout ends the verification after reading that long with no order settling.
	VerifyTimeout time.Duration

	// sustain (and overload without --sustained).
	Bound        time.Duration
	From         float64
	Max          float64
	Factor       float64
	Refine       int
	StepDuration time.Duration

	// overload.
	Sustained float64
	Multiple  float64

	// Output.
	JSON bool
	Out  string
}

// DefaultRate is the offered rate of a scenario when --rate is not given: the issue's
// targets (RESULT at 200 orders/s, ACK at 1,000).
func DefaultRate(scenario string) float64 {
	switch scenario {
	case ScenarioResult:
		return 200
	case ScenarioAck:
		return 1000
	}
	return 0
}

// DefaultDuration is a scenario's load duration when --duration is not given.
func DefaultDuration(scenario string) time.Duration {
	if scenario == ScenarioOverload {
		return 30 * time.Second
	}
	return 60 * time.Second
}

// Register declares the options' flags on fs with their defaults.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.BaseURL, "base-url", "", "service base URL (default $TRADESVC_BASE_URL, else https://<listen>)")
	fs.StringVar(&o.CACert, "ca-cert", "", "PEM of the CA to trust (default $TRADESVC_CA_CERT, else <run-dir>/tls/ca.pem)")
	fs.Float64Var(&o.Rate, "rate", 0, "offered orders per second (default: result 200, ack 1000)")
	fs.DurationVar(&o.Duration, "duration", 0, "how long the load is offered (default: 60s; overload 30s)")
	fs.StringVar(&o.Symbol, "symbol", "BTCUSD", "symbol of the MARKET orders")
	fs.StringVar(&o.Volume, "volume", "0.01", "volume of each order, lots")
	fs.StringVar(&o.Side, "side", "BUY", "side of each order: BUY or SELL")
	fs.IntVar(&o.Conns, "conns", 512, "HTTPS keep-alive connections at most (requests beyond wait for one; the wait is reported)")
	fs.Int64Var(&o.RecvWindow, "recv-window", 0, "recvWindow of signed requests, ms (0: none sent, the service's 5000)")
	fs.StringVar(&o.KeysFile, "keys", "", "`file` of API keys, JSON lines {\"apiKey\",\"apiSecret\",\"logins\"} (as 'tradesvc keys create' prints)")
	fs.StringVar(&o.CreateKeys, "create-keys", "", "`N` keys to create, or 'auto': as many as the rates need beyond --keys (through the key store, like 'tradesvc keys create')")
	fs.StringVar(&o.KeysOut, "keys-out", "", "write every key used to this file (JSON lines, mode 0600), to reuse with --keys")
	fs.Func("logins", "logins created keys trade, comma separated (default the simulator's load accounts 1101-1116)", func(s string) error {
		l, err := ParseLogins(s)
		o.Logins = l
		return err
	})
	fs.IntVar(&o.LoginsPerKey, "logins-per-key", 1, "logins each created key is scoped to (a user stream carries every login of its key)")
	fs.Float64Var(&o.KeyUsage, "key-usage", 0.8, "fraction of each key's ORDERS and REQUEST_WEIGHT budgets the load uses (the rest is headroom)")
	fs.StringVar(&o.Fund, "fund", "", "`amount` deposited on every login traded, before the load (the simulator's deposit, like 'tradesvc sim deposit')")
	fs.BoolVar(&o.Floor, "floor", true, "measure the floor: HTTPS round trip, two chained Kafka hops, one Postgres commit")
	fs.IntVar(&o.FloorSamples, "floor-samples", 200, "samples of each part of the floor")
	fs.BoolVar(&o.Streams, "streams", true, "open each key's user data stream and time every order's DEAL (ack, sustain, overload)")
	fs.IntVar(&o.StreamKeys, "stream-keys", 0, "open the user data streams of the first N keys only, and time only their orders' DEALs (0: every key's)")
	fs.DurationVar(&o.Settle, "settle", 2*time.Minute, "after the load, how long to wait for the DEAL frames still missing")
	fs.BoolVar(&o.Verify, "verify", true, "verify through GET /v1/order that every acknowledged order is FILLED")
	fs.DurationVar(&o.VerifyTimeout, "verify-timeout", time.Minute, "verification ends after reading this long without any order settling (terminal); what is left is not FILLED")
	fs.DurationVar(&o.Bound, "bound", time.Second, "sustain: the acceptance-to-FILLED p99 a sustained rate keeps under")
	fs.Float64Var(&o.From, "from", 100, "sustain: first rate tried, orders/s")
	fs.Float64Var(&o.Max, "max", 3000, "sustain: highest rate tried, orders/s")
	fs.Float64Var(&o.Factor, "factor", 1.5, "sustain: each passing step multiplies the rate by this")
	fs.IntVar(&o.Refine, "refine", 2, "sustain: bisection steps between the last passing and the first failing rate")
	fs.DurationVar(&o.StepDuration, "step", 30*time.Second, "sustain: duration of each step (long enough for the queues to reach their steady state: a rate passed for 10 s may not hold for a minute)")
	fs.Float64Var(&o.Sustained, "sustained", 0, "overload: the sustained rate to multiply (0: find it first, as sustain does)")
	fs.Float64Var(&o.Multiple, "multiple", 3, "overload: offered rate as a multiple of the sustained rate")
	fs.BoolVar(&o.JSON, "json", false, "print the report as JSON instead of the table")
	fs.StringVar(&o.Out, "out", "", "also write the JSON report to this file")
}

// Normalize fills the scenario's defaults and validates; it reports every problem at once.
func (o *Options) Normalize() error {
	var errs []error
	switch o.Scenario {
	case ScenarioResult, ScenarioAck, ScenarioOverload, ScenarioSustain:
	default:
		errs = append(errs, fmt.Errorf("unknown scenario %q (want %s)", o.Scenario, strings.Join(Scenarios(), ", ")))
	}
	if o.Rate == 0 {
		o.Rate = DefaultRate(o.Scenario)
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration(o.Scenario)
	}
	if len(o.Logins) == 0 {
		o.Logins = LoadLogins()
	}
	if (o.Scenario == ScenarioResult || o.Scenario == ScenarioAck) && o.Rate <= 0 {
		errs = append(errs, errors.New("--rate must be positive"))
	}
	if o.Duration <= 0 || o.StepDuration <= 0 {
		errs = append(errs, errors.New("--duration and --step must be positive"))
	}
	if v, err := dec.Parse(o.Volume); err != nil || v.Sign() <= 0 {
		errs = append(errs, fmt.Errorf("--volume %q: want a positive decimal", o.Volume))
	}
	if o.Fund != "" {
		if v, err := dec.Parse(o.Fund); err != nil || v.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("--fund %q: want a positive decimal", o.Fund))
		}
	}
	o.Side = strings.ToUpper(o.Side)
	if o.Side != "BUY" && o.Side != "SELL" {
		errs = append(errs, fmt.Errorf("--side %q: want BUY or SELL", o.Side))
	}
	if o.Symbol == "" {
		errs = append(errs, errors.New("--symbol is empty"))
	}
	if o.Conns <= 0 || o.FloorSamples <= 0 || o.LoginsPerKey <= 0 || o.StreamKeys < 0 {
		errs = append(errs, errors.New("--conns, --floor-samples and --logins-per-key must be positive, --stream-keys not negative"))
	}
	if o.KeyUsage <= 0 || o.KeyUsage > 1 {
		errs = append(errs, errors.New("--key-usage must be in (0, 1]"))
	}
	if _, _, err := o.CreateCount(); err != nil {
		errs = append(errs, err)
	}
	if o.From <= 0 || o.Max < o.From || o.Factor <= 1 || o.Refine < 0 || o.Bound <= 0 {
		errs = append(errs, errors.New("sustain wants 0 < --from <= --max, --factor > 1, --refine >= 0, --bound > 0"))
	}
	if o.Multiple <= 0 || o.Sustained < 0 {
		errs = append(errs, errors.New("--multiple must be positive and --sustained not negative"))
	}
	return errors.Join(errs...)
}

// CreateCount reads --create-keys: how many keys to create up front, or auto.
func (o *Options) CreateCount() (n int, auto bool, err error) {
	switch o.CreateKeys {
	case "":
		return 0, false, nil
	case "auto":
		return 0, true, nil
	}
	n, err = strconv.Atoi(o.CreateKeys)
	if err != nil || n < 0 {
		return 0, false, fmt.Errorf("--create-keys %q: want a number or auto", o.CreateKeys)
	}
	return n, false, nil
}

// ParseLogins reads a comma-separated list of logins.
func ParseLogins(s string) ([]int64, error) {
	var out []int64
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("login %q is not a positive integer", p)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("no logins")
	}
	return out, nil
}

// LoadLogins are the simulator's load accounts (docs/simulator.md): a trade server takes an
// account's operations one at a time, so a load is spread over many accounts, as a broker's is.
func LoadLogins() []int64 {
	out := make([]int64, 0, 16)
	for l := int64(1101); l <= 1116; l++ {
		out = append(out, l)
	}
	return out
}
