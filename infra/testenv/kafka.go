package testenv

import (
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/infra/kafka"
)

// TopicPrefix returns a topic prefix unique to this test ("t_<hex>.") for
// infra/kafka.Config.TopicPrefix, so that tests sharing the broker never see each other's
// messages. When the test ends, every topic and consumer group carrying the prefix is deleted (best effort:
// a failure is logged, not fatal, because the data is already isolated).
func TopicPrefix(t testing.TB) string {
	t.Helper()
	brokers := Kafka(t)
	prefix := Name(t) + "."
	t.Cleanup(func() { deleteTopics(t, strings.Split(brokers, ","), prefix) })
	return prefix
}

func deleteTopics(t testing.TB, brokers []string, prefix string) {
	cfg := sarama.NewConfig()
	cfg.Version = kafka.ProtocolVersion()
	cfg.ClientID = "tradesvc-testenv"
	cfg.Admin.Timeout = 10 * time.Second
	admin, err := sarama.NewClusterAdmin(brokers, cfg)
	if err != nil {
		t.Logf("testenv: cannot delete topics %s*: %v", prefix, err)
		return
	}
	defer admin.Close()
	topics, err := admin.ListTopics()
	if err != nil {
		t.Logf("testenv: cannot list topics: %v", err)
		return
	}
	for name := range topics {
		if strings.HasPrefix(name, prefix) {
			if err := admin.DeleteTopic(name); err != nil {
				t.Logf("testenv: delete topic %s: %v", name, err)
			}
		}
	}
	// infra/kafka prefixes consumer-group names too; drop the test's (now empty) groups.
	groups, err := admin.ListConsumerGroups()
	if err != nil {
		t.Logf("testenv: cannot list consumer groups: %v", err)
		return
	}
	for name := range groups {
		if strings.HasPrefix(name, prefix) {
			if err := admin.DeleteConsumerGroup(name); err != nil {
				t.Logf("testenv: delete consumer group %s: %v", name, err)
			}
		}
	}
}

// Brokers splits Kafka(t) into a broker list.
func Brokers(t testing.TB) []string {
	t.Helper()
	return strings.Split(Kafka(t), ",")
}
