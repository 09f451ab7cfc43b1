package config

import "time"

// Health holds the settings of readiness (GET /readyz on the metrics listener) and of
// poison-message handling.
type Health struct {
	// Interval is how often dependencies (Kafka, Postgres, ClickHouse, the trade server)
	// are probed; /readyz answers from the latest probe.
	Interval time.Duration
	// QuoteMaxAge: a gateway whose newest quote (any symbol) is older than this is not
	// ready: its market data is stale. Zero turns the check off (a venue that closes).
	QuoteMaxAge time.Duration
	// ProjectionStall: a projection behind the log that applied nothing for this long is
	// stuck, and the projector is not ready.
	ProjectionStall time.Duration
	// PoisonAttempts is how many times in a row a message may fail the same way, with its
	// store reachable, before it is parked in the dead-letter topic.
	PoisonAttempts int
}
