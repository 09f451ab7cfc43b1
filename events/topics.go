package events

// Topic describes one Kafka topic of the event log: its name, how many partitions it has,
// what its messages are keyed by (the partition key keeps one account's or one symbol's
// events ordered), and how long it keeps them.
type Topic struct {
	// Name is the topic name without the deployment prefix (see infra/config TopicPrefix).
	Name string
	// Partitions is the partition count the service creates the topic with.
	Partitions int32
	// KeyedBy documents the partition key: "login" or "symbol" or "entity".
	KeyedBy string
	// Compacted topics keep the latest message per key forever (reference data).
	Compacted bool
	// RetentionMs is the time-based retention; -1 keeps messages forever.
	RetentionMs int64
}

// The topic catalogue. Names never change casually: auditors replay these topics. Each
// topic is a function, not a variable, so that no package can change the catalogue.

// TopicCommands holds what clients asked for (OrderRequested_v1 and its kin), keyed by login.
func TopicCommands() Topic {
	return Topic{Name: "tradesvc.commands.v1", Partitions: 8, KeyedBy: "login", RetentionMs: -1}
}

// TopicExecutions holds what the executor did with each command (sent, outcome), keyed by login.
func TopicExecutions() Topic {
	return Topic{Name: "tradesvc.executions.v1", Partitions: 8, KeyedBy: "login", RetentionMs: -1}
}

// TopicTrades holds facts reported by the trade server (deals, order, position and
// account changes), keyed by login.
func TopicTrades() Topic {
	return Topic{Name: "tradesvc.trades.v1", Partitions: 8, KeyedBy: "login", RetentionMs: -1}
}

// TopicTicks holds market data (quotes and trading-day statistics), keyed by symbol.
// Market data is not part of the audit log; ClickHouse keeps the history as bars and
// ticks, so this topic keeps seven days.
func TopicTicks() Topic {
	return Topic{Name: "tradesvc.ticks.v1", Partitions: 4, KeyedBy: "symbol", RetentionMs: 7 * 24 * 3600 * 1000}
}

// TopicReference holds the latest specification of every symbol and account, keyed by
// entity ("symbol:EURUSD", "account:1001"); compacted, so a new projection can always
// rebuild reference data from it.
func TopicReference() Topic {
	return Topic{Name: "tradesvc.reference.v1", Partitions: 4, KeyedBy: "entity", Compacted: true, RetentionMs: -1}
}

// Topics lists every topic of the event log.
func Topics() []Topic {
	return []Topic{TopicCommands(), TopicExecutions(), TopicTrades(), TopicTicks(), TopicReference()}
}

// DeadLetterSuffix ends the name of a topic's dead-letter topic.
const DeadLetterSuffix = ".dlq"

// DeadLetter is the dead-letter topic of t: where consumers park the messages of t they can
// never apply (undecodable, or failing the same way again and again), with the error and
// where each came from, so that nothing is dropped (docs/operations.md, "Dead letters").
// One partition keeps the parked messages in the order they were parked; they are kept
// until an operator has replayed them, so forever.
func (t Topic) DeadLetter() Topic {
	return Topic{Name: t.Name + DeadLetterSuffix, Partitions: 1, KeyedBy: t.KeyedBy, RetentionMs: -1}
}

// DeadLetterTopics lists the dead-letter topic of every topic of the log.
func DeadLetterTopics() []Topic {
	var out []Topic
	for _, t := range Topics() {
		out = append(out, t.DeadLetter())
	}
	return out
}

// AllTopics is every topic the service creates at start-up: the log and its dead letters.
func AllTopics() []Topic { return append(Topics(), DeadLetterTopics()...) }
