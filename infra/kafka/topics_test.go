package kafka_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/testenv"
)

func testConfig(t *testing.T) kafka.Config {
	t.Helper()
	return kafka.Config{Brokers: testenv.Brokers(t), TopicPrefix: testenv.TopicPrefix(t), ClientID: "tradesvc-test"}
}

// publisherOn makes topic under cfg's prefix and returns a publisher, closed when the test
// ends.
func publisherOn(tb testing.TB, ctx context.Context, cfg kafka.Config, topic events.Topic) *kafka.Publisher {
	tb.Helper()
	if err := kafka.EnsureTopics(ctx, cfg, []events.Topic{topic}); err != nil {
		tb.Fatal(err)
	}
	pub, err := kafka.NewPublisher(cfg, testenv.Logger())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = pub.Close() })
	return pub
}

func newAdmin(t *testing.T, cfg kafka.Config) sarama.ClusterAdmin {
	t.Helper()
	sc := sarama.NewConfig()
	sc.Version = kafka.ProtocolVersion()
	admin, err := sarama.NewClusterAdmin(cfg.Brokers, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	return admin
}

func topicConfig(t *testing.T, admin sarama.ClusterAdmin, topic string) map[string]string {
	t.Helper()
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		out[e.Name] = e.Value
	}
	return out
}

// EnsureTopics creates the whole catalogue under the prefix with the catalogue's partition
// counts, retention and cleanup policy; running it again changes nothing; a retention
// changed by hand is put back.
func TestEnsureTopics_CreatesCatalogueIdempotentlyAndRestoresConfigs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := testConfig(t)
	admin := newAdmin(t, cfg)

	for run := range 2 {
		if err := kafka.EnsureTopics(ctx, cfg, events.Topics()); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
	}

	metas, err := admin.DescribeTopics(func() (names []string) {
		for _, tp := range events.Topics() {
			names = append(names, cfg.Topic(tp.Name))
		}
		return names
	}())
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*sarama.TopicMetadata{}
	for _, m := range metas {
		byName[m.Name] = m
	}
	for _, tp := range events.Topics() {
		name := cfg.Topic(tp.Name)
		if !strings.HasPrefix(name, cfg.TopicPrefix) || name == tp.Name {
			t.Fatalf("topic %s not prefixed", name)
		}
		m := byName[name]
		if m == nil || m.Err != sarama.ErrNoError {
			t.Fatalf("topic %s missing: %+v", name, m)
		}
		if len(m.Partitions) != int(tp.Partitions) {
			t.Errorf("%s: %d partitions, want %d", name, len(m.Partitions), tp.Partitions)
		}
		got := topicConfig(t, admin, name)
		for k, want := range kafka.TopicConfigs(tp) {
			if got[k] != want {
				t.Errorf("%s: %s=%q, want %q", name, k, got[k], want)
			}
		}
	}
	if got := topicConfig(t, admin, cfg.Topic(events.TopicReference().Name))["cleanup.policy"]; got != "compact" {
		t.Errorf("reference topic cleanup.policy=%q, want compact", got)
	}
	if got := topicConfig(t, admin, cfg.Topic(events.TopicCommands().Name))["retention.ms"]; got != "-1" {
		t.Errorf("commands topic retention.ms=%q, want -1 (kept forever)", got)
	}

	// Drift: someone shortened the retention of the command log by hand.
	oneHour := "3600000"
	commands := cfg.Topic(events.TopicCommands().Name)
	if err := admin.AlterConfig(sarama.TopicResource, commands, map[string]*string{"retention.ms": &oneHour}, false); err != nil {
		t.Fatal(err)
	}
	// The controller has committed the change; the broker that answers DescribeConfig
	// applies it from the metadata log a moment later. EnsureTopics must see the drift.
	if got := awaitTopicConfig(t, admin, commands, "retention.ms", oneHour); got != oneHour {
		t.Fatalf("drift never became visible: retention.ms=%q, want %q", got, oneHour)
	}
	if err := kafka.EnsureTopics(ctx, cfg, events.Topics()); err != nil {
		t.Fatal(err)
	}
	if got := awaitTopicConfig(t, admin, commands, "retention.ms", "-1"); got != "-1" {
		t.Errorf("after drift: retention.ms=%q, want -1 restored", got)
	}
}

// awaitTopicConfig reads key of topic until it equals want or 10 s pass, and returns the
// last value read: config changes reach the broker's view asynchronously.
func awaitTopicConfig(t *testing.T, admin sarama.ClusterAdmin, topic, key, want string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := topicConfig(t, admin, topic)[key]
		if got == want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A topic whose partition count differs from the catalogue is refused, not repartitioned.
func TestEnsureTopics_RefusesPartitionCountMismatch(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := testConfig(t)
	tp := events.Topic{Name: "mismatch.v1", Partitions: 2, KeyedBy: "login", RetentionMs: -1}
	if err := kafka.EnsureTopics(ctx, cfg, []events.Topic{tp}); err != nil {
		t.Fatal(err)
	}
	tp.Partitions = 3
	err := kafka.EnsureTopics(ctx, cfg, []events.Topic{tp})
	if err == nil || !strings.Contains(err.Error(), "partitions") {
		t.Fatalf("mismatch accepted: %v", err)
	}
}

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	bad := []kafka.Config{
		{},
		{Brokers: []string{"localhost"}},
		{Brokers: []string{"127.0.0.1:9092"}, TopicPrefix: "bad prefix/"},
		{Brokers: []string{"127.0.0.1:9092"}, ReplicationFactor: -1},
	}
	for _, c := range bad {
		if c.Validate() == nil {
			t.Errorf("accepted %+v", c)
		}
	}
	good := kafka.Config{Brokers: []string{"127.0.0.1:9092"}, TopicPrefix: "ci-1."}
	if err := good.Validate(); err != nil {
		t.Errorf("refused %+v: %v", good, err)
	}
	if got := good.Topic("tradesvc.commands.v1"); got != "ci-1.tradesvc.commands.v1" {
		t.Errorf("Topic = %q", got)
	}
}

// The producer settings are the ones the service's durability argument rests on.
func TestConfig_ProducerIsIdempotentAndConsumerStartsAtOldest(t *testing.T) {
	t.Parallel()
	cfg := kafka.Config{Brokers: []string{"127.0.0.1:9092"}}
	p := cfg.ProducerConfig()
	if !p.Producer.Idempotent || p.Producer.RequiredAcks != sarama.WaitForAll || p.Net.MaxOpenRequests != 1 || !p.Producer.Return.Successes {
		t.Errorf("producer not idempotent/acks=all: %+v", p.Producer)
	}
	if err := p.Validate(); err != nil {
		t.Errorf("sarama refuses the producer config: %v", err)
	}
	c := cfg.ConsumerConfig()
	if c.Consumer.Offsets.Initial != sarama.OffsetOldest || !c.Consumer.Offsets.AutoCommit.Enable || c.Consumer.MaxWaitTime > 100*time.Millisecond {
		t.Errorf("consumer config: %+v", c.Consumer)
	}
	if p.Version != kafka.ProtocolVersion() || c.Version != kafka.ProtocolVersion() {
		t.Errorf("protocol version not set explicitly")
	}
}
