// Package metrics exposes the service's Prometheus metrics: HTTP requests of the gateway,
// batches applied by each projection, and what the relay appends from the trade server. The
// components report through plain hook functions (they import nothing of this package); the
// composition root connects the hooks to a Metrics value, and the role that serves metrics
// exposes Handler on a loopback address of its own, never on the public API port.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics holds the collectors of one process.
type Metrics struct {
	reg *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec

	projBatches  *prometheus.CounterVec
	projEvents   *prometheus.CounterVec
	projFailures *prometheus.CounterVec
	projOffset   *prometheus.GaugeVec

	relayAppended *prometheus.CounterVec
	relaySeq      *prometheus.GaugeVec
	relayActive   prometheus.Gauge

	ready         *prometheus.GaugeVec
	dependencyUp  *prometheus.GaugeVec
	lagEvents     *prometheus.GaugeVec
	lagSeconds    *prometheus.GaugeVec
	stuck         *prometheus.GaugeVec
	deadLetters   *prometheus.CounterVec
	quoteAge      *prometheus.GaugeVec
	undecodable   *prometheus.CounterVec
	heartbeatAge  prometheus.Gauge
	orderStage    *prometheus.HistogramVec
	shed          *prometheus.CounterVec
	boundLowered  *prometheus.CounterVec
	freshBatches  *prometheus.CounterVec
	earlyOutcomes *prometheus.CounterVec
}

// New registers every collector on a fresh registry (plus the Go runtime and process ones).
// A collector is registered where it is declared, so none can be declared and never exported.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tradesvc_" + name, Help: help}, labels)
		reg.MustRegister(c)
		return c
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tradesvc_" + name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tradesvc_" + name, Help: help, Buckets: buckets}, labels)
		reg.MustRegister(h)
		return h
	}
	m := &Metrics{
		reg: reg,
		httpRequests: counter("http_requests_total",
			"REST requests answered, by method, route and HTTP status.", "method", "route", "status"),
		httpDuration: histogram("http_request_duration_seconds", "Time to answer a REST request, by method and route.",
			[]float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}, "method", "route"),
		projBatches:  counter("projection_batches_total", "Batches a projection applied.", "projection"),
		projEvents:   counter("projection_events_total", "Events a projection applied.", "projection"),
		projFailures: counter("projection_failures_total", "Failed attempts to apply a batch (each is retried).", "projection"),
		projOffset: gauge("projection_offset",
			"Offset of the last message a projection applied, per topic partition.", "projection", "topic", "partition"),
		relayAppended: counter("relay_appended_total",
			"Records the relay appended to the log from the trade server, by feed.", "feed"),
		relaySeq: gauge("relay_sequence", "Last trade-server feed sequence the relay appended, by feed.", "feed"),
		ready:    gauge("ready", "1 when the role is ready (GET /readyz), 0 when not.", "role"),
		dependencyUp: gauge("dependency_up",
			"1 when the dependency answered its last probe (kafka, postgres, clickhouse, tradeServer), 0 when not.",
			"dependency"),
		lagEvents: gauge("consumer_lag_events",
			"Messages of its partitions a projection (or the executor) has not applied yet.", "consumer"),
		lagSeconds: gauge("consumer_lag_seconds",
			"How far behind the log a consumer is, in seconds of log time (0 when caught up).", "consumer"),
		stuck: gauge("consumer_stuck",
			"1 when a consumer is behind or failing without progress for longer than the stall bound.", "consumer"),
		deadLetters: counter("dead_letters_total",
			"Messages a consumer parked in the dead-letter topic of their topic.", "consumer", "topic"),
		quoteAge: gauge("quote_age_seconds",
			"Age of the newest quote of a symbol in the gateway's market projection.", "symbol"),
		undecodable: counter("tail_undecodable_total",
			"Messages the gateway's tick tail could not decode (the projections park them).", "topic"),
		relayActive: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tradesvc_relay_active",
			Help: "1 while this process holds the relay lease and relays, 0 while it stands by."}),
		heartbeatAge: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tradesvc_executor_heartbeat_age_seconds",
			Help: "Seconds since this executor last recorded its heartbeat."}),
		orderStage: histogram("order_stage_seconds",
			"Where an operation's time goes, stage by stage (docs/benchmarks.md): recorded, queued (from "+
				"the request's arrival), picked (from the command's append), claimed, sent, appended, consumed (from the "+
				"decision), projected (from the decision), answered (from the request's arrival).",
			[]float64{.0001, .00025, .0005, .001, .002, .004, .008, .016, .032, .064, .128, .256, .512, 1, 2, 5}, "stage"),
		shed: counter("shed_total",
			"Operations answered -1008 (overloaded; did not execute), by kind and the bound that was passed.",
			"kind", "reason"),
		boundLowered: counter("admission_bound_lowered_total",
			"Windows in which the gateway's adaptive in-flight bound was lowered (or held at its minimum), by cause: "+
				"lagging (operations --admit-max-age late), cpu (the process short of CPU), queue (a standing queue).",
			"cause"),
		earlyOutcomes: counter("trading_early_outcomes_total",
			"Outcomes the trading projection applied early, while the executor of this process appended them "+
				"(docs/trading.md): committed (result \"committed\"), or rolled back and left to its consumer (\"consumer\").",
			"result"),
		freshBatches: counter("trading_fresh_batches_total",
			"Batches the trading projection planned as fresh (docs/trading.md): applied in one pipeline (result "+
				"\"applied\"), or found otherwise by their fence and applied the long way (\"fenced\").", "result"),
	}
	reg.MustRegister(m.heartbeatAge, m.relayActive,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// TradingEarly counts an outcome the trading projection applied early: committed, or left to
// its consumer.
func (m *Metrics) TradingEarly(committed bool) {
	result := "committed"
	if !committed {
		result = "consumer"
	}
	m.earlyOutcomes.WithLabelValues(result).Inc()
}

// TradingFresh counts a batch the trading projection planned as fresh: applied, or fenced.
func (m *Metrics) TradingFresh(fenced bool) {
	result := "applied"
	if fenced {
		result = "fenced"
	}
	m.freshBatches.WithLabelValues(result).Inc()
}

// OrderStage records how long one stage of an operation's path took.
func (m *Metrics) OrderStage(stage string, took time.Duration) {
	m.orderStage.WithLabelValues(stage).Observe(took.Seconds())
}

// Shed counts an operation answered -1008.
func (m *Metrics) Shed(kind, reason string) { m.shed.WithLabelValues(kind, reason).Inc() }

// BoundLowered counts a window in which the admission's in-flight bound was lowered, by cause.
func (m *Metrics) BoundLowered(cause string) { m.boundLowered.WithLabelValues(cause).Inc() }

// SetReady records a role's readiness (health.Sink).
func (m *Metrics) SetReady(role string, ready bool) { m.ready.WithLabelValues(role).Set(b2f(ready)) }

// SetDependencyUp records a dependency's last probe (health.Sink).
func (m *Metrics) SetDependencyUp(name string, up bool) {
	m.dependencyUp.WithLabelValues(name).Set(b2f(up))
}

// ConsumerStatus records a consumer's lag and whether it is stuck.
func (m *Metrics) ConsumerStatus(consumer string, lagEvents int64, lagSeconds float64, stuck bool) {
	m.lagEvents.WithLabelValues(consumer).Set(float64(lagEvents))
	m.lagSeconds.WithLabelValues(consumer).Set(lagSeconds)
	m.stuck.WithLabelValues(consumer).Set(b2f(stuck))
}

// DeadLetterParked counts a message a consumer parked.
func (m *Metrics) DeadLetterParked(consumer, topic string) {
	m.deadLetters.WithLabelValues(consumer, topic).Inc()
}

// QuoteAge records the age of a symbol's newest quote.
func (m *Metrics) QuoteAge(symbol string, age time.Duration) {
	m.quoteAge.WithLabelValues(symbol).Set(age.Seconds())
}

// TailUndecodable counts a message the tick tail could not decode.
func (m *Metrics) TailUndecodable(topic string) { m.undecodable.WithLabelValues(topic).Inc() }

// HeartbeatAge records how long ago this executor's heartbeat was last recorded.
func (m *Metrics) HeartbeatAge(age time.Duration) { m.heartbeatAge.Set(age.Seconds()) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// HTTPRequest records one answered REST request. route is the route pattern (never the raw
// path, which would make a series per URL).
func (m *Metrics) HTTPRequest(method, route string, status int, took time.Duration) {
	m.httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(took.Seconds())
}

// ProjectionBatch records one batch a projection applied, or one failed attempt.
func (m *Metrics) ProjectionBatch(projection, topic string, partition int32, events int, lastOffset int64, err error) {
	if err != nil {
		m.projFailures.WithLabelValues(projection).Inc()
		return
	}
	m.projBatches.WithLabelValues(projection).Inc()
	m.projEvents.WithLabelValues(projection).Add(float64(events))
	m.projOffset.WithLabelValues(projection, topic, strconv.Itoa(int(partition))).Set(float64(lastOffset))
}

// RelayActive records whether this process's relay holds the lease.
func (m *Metrics) RelayActive(active bool) { m.relayActive.Set(b2f(active)) }

// RelayAppended records records the relay appended from feed, up to sequence lastSeq.
func (m *Metrics) RelayAppended(feed string, n int, lastSeq uint64) {
	m.relayAppended.WithLabelValues(feed).Add(float64(n))
	m.relaySeq.WithLabelValues(feed).Set(float64(lastSeq))
}
