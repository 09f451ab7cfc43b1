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
	brokers := Brokers(t)
	prefix := Name(t) + "."
	t.Cleanup(func() { deleteTopics(t, brokers, prefix) })
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
	deletePrefixed(t, prefix, "topic", admin.ListTopics, admin.DeleteTopic)
	// infra/kafka prefixes consumer-group names too; drop the test's (now empty) groups.
	deletePrefixed(t, prefix, "consumer group", admin.ListConsumerGroups, admin.DeleteConsumerGroup)
}

// deletePrefixed deletes every listed name that carries prefix, logging what fails.
func deletePrefixed[T any](t testing.TB, prefix, what string, list func() (map[string]T, error), del func(string) error) {
	names, err := list()
	if err != nil {
		t.Logf("testenv: cannot list %ss: %v", what, err)
		return
	}
	for name := range names {
		if strings.HasPrefix(name, prefix) {
			if err := del(name); err != nil {
				t.Logf("testenv: delete %s %s: %v", what, name, err)
			}
		}
	}
}

// Brokers splits Kafka(t) into a broker list.
func Brokers(t testing.TB) []string {
	t.Helper()
	return strings.Split(Kafka(t), ",")
}
