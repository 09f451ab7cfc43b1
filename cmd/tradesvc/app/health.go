package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/command"
	"tradesvc/gateway"
	"tradesvc/infra/config"
	"tradesvc/infra/health"
	"tradesvc/infra/kafka"
	"tradesvc/projections"
)

// newHealth builds the readiness monitor of this process: a probe per dependency it uses,
// a report per role it runs (docs/operations.md, "Liveness and readiness").
func (a *App) newHealth() error {
	a.consumers = health.NewConsumers(a.now, a.metrics.DeadLetterParked)
	m, err := health.New(health.Config{Interval: a.cfg.Health.Interval, Now: a.now, Sink: a.metrics,
		Logger: a.log.With("component", "health")})
	if err != nil {
		return err
	}
	a.health = m
	if a.cfg.Has(config.RoleGateway) || a.cfg.Has(config.RoleExecutor) || a.cfg.Has(config.RoleRelay) ||
		a.cfg.Has(config.RoleProjector) {
		a.probe = &kafkaProbe{kcfg: a.kcfg, consumers: a.consumers}
		m.AddDependency("kafka", a.probe.check)
	}
	if a.pool != nil {
		m.AddDependency("postgres", a.pool.Ping)
	}
	if a.ch != nil {
		m.AddDependency("clickhouse", a.ch.Ping)
	}
	if a.port != nil {
		m.AddDependency("tradeServer", func(ctx context.Context) error {
			_, err := a.port.ServerInfo(ctx)
			return err
		})
	}
	if a.cfg.Has(config.RoleGateway) {
		m.AddRole(config.RoleGateway, a.gatewayReport)
	}
	if a.cfg.Has(config.RoleExecutor) {
		m.AddRole(config.RoleExecutor, a.executorReport)
	}
	if a.cfg.Has(config.RoleRelay) {
		m.AddRole(config.RoleRelay, a.relayReport)
	}
	if a.cfg.Has(config.RoleProjector) {
		m.AddRole(config.RoleProjector, a.projectorReport)
	}
	return nil
}

// Health returns the readiness monitor (for tests).
func (a *App) Health() *health.Monitor { return a.health }

// kafkaProbe checks that Kafka answers, and reads the newest offset of every partition a
// consumer of this process owns, so that a consumer that stopped reading still shows lag.
type kafkaProbe struct {
	kcfg      kafka.Config
	consumers *health.Consumers

	mu     sync.Mutex
	client sarama.Client
}

func (p *kafkaProbe) check(ctx context.Context) error {
	client, err := p.get()
	if err != nil {
		return err
	}
	if err := client.RefreshMetadata(); err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	return p.highWaters(ctx, p.consumers.Partitions())
}

// highWaters reads the newest offset of the partitions into the consumer tracker, with one
// request per leader broker.
func (p *kafkaProbe) highWaters(ctx context.Context, parts map[string][]int32) error {
	client, err := p.get()
	if err != nil {
		return err
	}
	reqs := map[*sarama.Broker]*sarama.OffsetRequest{}
	for topic, ps := range parts {
		for _, part := range ps {
			b, err := client.Leader(topic, part)
			if err != nil {
				return fmt.Errorf("leader of %s/%d: %w", topic, part, err)
			}
			if reqs[b] == nil {
				reqs[b] = sarama.NewOffsetRequest(client.Config().Version)
			}
			reqs[b].AddBlock(topic, part, sarama.OffsetNewest, 1)
		}
	}
	for b, req := range reqs {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		res, err := b.GetAvailableOffsets(req)
		if err != nil {
			_ = b.Close() // reopened by the next Leader call
			return fmt.Errorf("ends of partitions from broker %d: %w", b.ID(), err)
		}
		for topic, ps := range parts {
			for _, part := range ps {
				blk := res.GetBlock(topic, part)
				if blk == nil {
					continue // another broker leads it
				}
				if !errors.Is(blk.Err, sarama.ErrNoError) {
					return fmt.Errorf("end of %s/%d: %w", topic, part, blk.Err)
				}
				if len(blk.Offsets) == 1 {
					p.consumers.SetHighWater(topic, part, blk.Offsets[0])
				}
			}
		}
	}
	return nil
}

// get returns the probe's client, connecting it on first use (and after Kafka was down
// when the process started).
func (p *kafkaProbe) get() (sarama.Client, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client != nil {
		return p.client, nil
	}
	sc := p.kcfg.ConsumerConfig()
	sc.ClientID = "tradesvc-health"
	sc.Net.DialTimeout, sc.Net.ReadTimeout, sc.Net.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
	sc.Metadata.Retry.Max = 0
	c, err := sarama.NewClient(p.kcfg.Brokers, sc)
	if err != nil {
		return nil, err
	}
	p.client = c
	return c, nil
}

// Close closes the probe's client.
func (p *kafkaProbe) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		return nil
	}
	return p.client.Close()
}

// gatewayHealth is what readiness reads of a running gateway.
type gatewayHealth struct {
	market    atomic.Pointer[projections.Market]
	feed      atomic.Pointer[projections.ChangeFeed]
	admission atomic.Pointer[gateway.Admission]

	mu        sync.Mutex
	tailErr   error
	tailSince time.Time
	tailUp    bool
}

func (g *gatewayHealth) tailState(err error, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if up := err == nil; up != g.tailUp || g.tailSince.IsZero() {
		g.tailSince = now
		g.tailUp = up
	}
	g.tailErr = err
}

type quoteAge struct {
	AgeSeconds float64 `json:"ageSeconds"`
	Held       bool    `json:"held,omitempty"`
}

type gatewayDetails struct {
	// NewestQuoteAgeSeconds is the age of the newest quote of any symbol (null: none yet).
	NewestQuoteAgeSeconds *float64            `json:"newestQuoteAgeSeconds"`
	QuoteMaxAgeSeconds    float64             `json:"quoteMaxAgeSeconds"`
	Quotes                map[string]quoteAge `json:"quotes"`
	TickTail              stateDetail         `json:"tickTail"`
	ChangeFeed            stateDetail         `json:"changeFeed"`
	// ExecutorAlive is the executors' heartbeat as this gateway last read it, and
	// TradeServerLinked whether a live executor reaches the trade server (TRADE endpoints
	// answer -5015 while either is false); TradingEnabled the operator switch; all as of
	// SwitchesReadAt (the last TRADE request). None makes a gateway unready: it still
	// serves every read.
	ExecutorAlive     bool      `json:"executorAlive"`
	TradeServerLinked bool      `json:"tradeServerLinked"`
	TradingEnabled    bool      `json:"tradingEnabled"`
	SwitchesReadAt    time.Time `json:"switchesReadAt,omitzero"`
	SwitchesError     string    `json:"switchesError,omitempty"`
	// Admission is the admission control: operations awaiting their outcome, and whether
	// (and why) it shed a request in the last 5 s. Shedding does not make a gateway unready:
	// it answers -1008 at once, which is its job under overload.
	Admission gateway.AdmissionState `json:"admission"`
}

type stateDetail struct {
	OK    bool      `json:"ok"`
	Error string    `json:"error,omitempty"`
	Since time.Time `json:"since,omitzero"`
}

// gatewayReport: not ready while the gateway has not started, while its market data is
// older than the configured bound (or absent), or while its change feed is down.
func (a *App) gatewayReport(now time.Time) health.RoleReport {
	market, feed := a.gw.market.Load(), a.gw.feed.Load()
	if market == nil || feed == nil {
		return health.RoleReport{Reasons: []string{"starting"}}
	}
	r := health.RoleReport{Ready: true}
	d := gatewayDetails{Quotes: map[string]quoteAge{}, QuoteMaxAgeSeconds: a.cfg.Health.QuoteMaxAge.Seconds()}
	var newest time.Duration
	any := false
	for _, q := range market.Quotes() {
		age := max(0, now.Sub(time.UnixMilli(q.Time)))
		if q.Held {
			age = 0 // a held quote is fresh for as long as it is held
		}
		d.Quotes[q.Symbol] = quoteAge{AgeSeconds: age.Seconds(), Held: q.Held}
		a.metrics.QuoteAge(q.Symbol, age)
		if !any || age < newest {
			newest, any = age, true
		}
	}
	if any {
		s := newest.Seconds()
		d.NewestQuoteAgeSeconds = &s
	}
	if bound := a.cfg.Health.QuoteMaxAge; bound > 0 {
		switch {
		case !any:
			r.Ready = false
			r.Reasons = append(r.Reasons, "no quote received yet")
		case newest > bound:
			r.Ready = false
			r.Reasons = append(r.Reasons, fmt.Sprintf("quotes are stale: the newest is %s old (bound %s)",
				newest.Round(100*time.Millisecond), bound))
		}
	}
	a.gw.mu.Lock()
	d.TickTail = stateDetail{OK: a.gw.tailUp, Since: a.gw.tailSince}
	if a.gw.tailErr != nil {
		d.TickTail.Error = a.gw.tailErr.Error()
	}
	a.gw.mu.Unlock()
	live, ferr, since := feed.Status()
	d.ChangeFeed = stateDetail{OK: live, Since: since}
	if ferr != nil {
		d.ChangeFeed.Error = ferr.Error()
	}
	if !live && ferr != nil {
		r.Ready = false
		r.Reasons = append(r.Reasons, "change feed down: "+ferr.Error())
	}
	d.TradingEnabled, d.ExecutorAlive, d.SwitchesReadAt = a.switches.Last()
	d.TradeServerLinked = a.switches.LastLinked()
	if err := a.switches.Err(); err != nil {
		d.SwitchesError = err.Error()
	}
	if adm := a.gw.admission.Load(); adm != nil {
		d.Admission = adm.State()
	}
	r.Details = d
	return r
}

// executorHealth is what readiness reads of a running executor.
type executorHealth struct {
	mu       sync.Mutex
	running  bool
	lastBeat time.Time
	beatErr  error
}

func (e *executorHealth) heartbeat(now time.Time, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.running = true
	if err == nil {
		e.lastBeat = now
	}
	e.beatErr = err
}

type executorDetails struct {
	LastHeartbeat  time.Time                        `json:"lastHeartbeat,omitzero"`
	HeartbeatError string                           `json:"heartbeatError,omitempty"`
	Consumer       map[string]health.ConsumerStatus `json:"consumer"`
}

// executorReport: not ready until its first heartbeat, when its heartbeat is older than
// half the gateways' timeout (they would soon answer -5015), or when its command consumer
// is stuck. The trade server's connection is a dependency (tradeServer).
func (a *App) executorReport(now time.Time) health.RoleReport {
	a.exec.mu.Lock()
	d := executorDetails{LastHeartbeat: a.exec.lastBeat}
	if a.exec.beatErr != nil {
		d.HeartbeatError = a.exec.beatErr.Error()
	}
	running := a.exec.running
	a.exec.mu.Unlock()
	r := health.RoleReport{Ready: true}
	switch age := now.Sub(d.LastHeartbeat); {
	case !running:
		r.Ready, r.Reasons = false, []string{"starting"}
	case d.LastHeartbeat.IsZero():
		r.Ready, r.Reasons = false, []string{"no heartbeat recorded yet: " + d.HeartbeatError}
	case age > command.ExecutorTimeout/2:
		r.Ready = false
		r.Reasons = append(r.Reasons, fmt.Sprintf("last heartbeat %s ago: %s", age.Round(time.Second), d.HeartbeatError))
	}
	if !d.LastHeartbeat.IsZero() {
		a.metrics.HeartbeatAge(now.Sub(d.LastHeartbeat))
	}
	d.Consumer = map[string]health.ConsumerStatus{}
	if st, ok := a.consumers.Status(now, a.cfg.Health.ProjectionStall)[consumerExecutor]; ok {
		d.Consumer[consumerExecutor] = st
		a.metrics.ConsumerStatus(consumerExecutor, st.LagEvents, st.LagSeconds, st.Stuck)
		if st.Stuck {
			r.Ready = false
			r.Reasons = append(r.Reasons, "command consumer stuck: "+st.StuckBecause)
		}
	}
	r.Details = d
	return r
}

// consumerExecutor names the executor's command consumer in the consumer tracker.
const consumerExecutor = "executor"

type projectorDetails struct {
	Projections map[string]health.ConsumerStatus `json:"projections"`
	// Parked counts the messages the projections parked since this process started.
	Parked int `json:"parked"`
}

// projectorReport: not ready while a projection is stuck (behind or failing without
// progress for longer than the stall bound).
func (a *App) projectorReport(now time.Time) health.RoleReport {
	d := projectorDetails{Projections: map[string]health.ConsumerStatus{}}
	r := health.RoleReport{Ready: true, Details: d}
	all := a.consumers.Status(now, a.cfg.Health.ProjectionStall)
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		st := all[name]
		if name == consumerExecutor {
			continue
		}
		d.Projections[name] = st
		d.Parked += st.Parked
		a.metrics.ConsumerStatus(name, st.LagEvents, st.LagSeconds, st.Stuck)
		if st.Stuck {
			r.Ready = false
			r.Reasons = append(r.Reasons, name+" is stuck: "+st.StuckBecause)
		}
	}
	r.Details = d
	return r
}
