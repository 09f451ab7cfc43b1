// Package kafka is the Kafka adapter of the event log: topic creation from the catalogue in
// tradesvc/events, a keyed idempotent publisher with a one-round-trip batch path, and
// consumer-group subscribers, all speaking watermill's message model over sarama.
//
// Topic and consumer-group names given to this package are logical names (events.Topic.Name,
// a projection's group name); the adapter adds Config.TopicPrefix itself, so no caller ever
// formats a physical name (see Config.Topic).
package kafka

import (
	"fmt"
	"strings"
	"time"
	"tradesvc/infra/check"

	"github.com/IBM/sarama"
	"github.com/rcrowley/go-metrics"
)

func init() {
	// sarama records every request, batch and response in go-metrics histograms (samples with
	// exponential decay, a few percent of the process's CPU under load) that nothing reads:
	// the service's own metrics are in infra/metrics. Nil metrics record nothing.
	metrics.UseNilMetrics = true
}

// ProtocolVersion is the Kafka protocol version sarama speaks. It must be set explicitly:
// watermill's default (1.0) disables features the service relies on, and the brokers we
// run (Kafka 3.6+ / 4.x) all understand it. Every sarama client of the service and of its
// tests takes it from here.
func ProtocolVersion() sarama.KafkaVersion { return sarama.V3_6_0_0 }

// Config describes the connection to the Kafka cluster.
type Config struct {
	// Brokers lists bootstrap brokers as host:port.
	Brokers []string
	// TopicPrefix is prepended to every topic and consumer-group name, so that several
	// deployments (or tests) can share one cluster. Empty in a dedicated cluster.
	TopicPrefix string
	// ClientID names this process in broker logs and quotas; "tradesvc" when empty.
	ClientID string
	// ReplicationFactor of the topics EnsureTopics creates; 1 when zero (single broker).
	// Production clusters use 3 (and min.insync.replicas=2 on the broker).
	ReplicationFactor int16
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var errs check.Problems
	errs.If(len(c.Brokers) == 0, "kafka: no brokers")
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			errs.Add(fmt.Errorf("kafka: broker %q is not host:port", b))
		}
	}
	for _, r := range c.TopicPrefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			errs.Add(fmt.Errorf("kafka: topic prefix %q: only letters, digits, '.', '_' and '-' are legal in topic names", c.TopicPrefix))
			break
		}
	}
	errs.If(c.ReplicationFactor < 0, "kafka: negative replication factor")
	return errs.Err()
}

// Topic returns the physical name of a logical topic or consumer group: the prefix plus the name.
func (c Config) Topic(name string) string { return c.TopicPrefix + name }

func (c Config) clientID() string {
	if c.ClientID == "" {
		return "tradesvc"
	}
	return c.ClientID
}

func (c Config) replicationFactor() int16 {
	if c.ReplicationFactor == 0 {
		return 1
	}
	return c.ReplicationFactor
}

func (c Config) base() *sarama.Config {
	sc := sarama.NewConfig()
	sc.Version = ProtocolVersion()
	sc.ClientID = c.clientID()
	sc.Metadata.Retry.Backoff = 250 * time.Millisecond
	return sc
}

// ProducerConfig returns the sarama settings of the publisher: an idempotent producer
// (no duplicates or reordering from internal retries) that waits for every in-sync replica,
// so a successful publish means the command is durably queued.
func (c Config) ProducerConfig() *sarama.Config {
	sc := c.base()
	sc.Producer.Idempotent = true
	sc.Producer.RequiredAcks = sarama.WaitForAll
	sc.Net.MaxOpenRequests = 1 // required by the idempotent producer; keeps order across retries
	sc.Producer.Retry.Max = 10
	sc.Producer.Retry.Backoff = 100 * time.Millisecond
	sc.Producer.Return.Successes = true
	sc.Producer.Return.Errors = true
	return sc
}

// ConsumerConfig returns the sarama settings of consumer-group subscribers.
func (c Config) ConsumerConfig() *sarama.Config {
	sc := c.base()
	// A new group (a new or renamed projection) starts from the beginning of the log.
	sc.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Auto-commit stays on: with it off, watermill commits on every ack and sarama holds
	// the broker lock for the whole fetch wait, stalling at ~2 commits/s (measured, see
	// INFRA.md). Delivery is at-least-once either way; handlers must be idempotent.
	sc.Consumer.Offsets.AutoCommit.Enable = true
	sc.Consumer.Offsets.AutoCommit.Interval = time.Second
	// The default 500 ms fetch wait delays every message that arrives on a quiet topic.
	sc.Consumer.MaxWaitTime = 100 * time.Millisecond
	sc.Consumer.Return.Errors = true
	return sc
}

func (c Config) adminConfig() *sarama.Config {
	sc := c.base()
	sc.Admin.Timeout = 30 * time.Second
	return sc
}
