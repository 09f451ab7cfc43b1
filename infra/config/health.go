package config

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

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

func healthSettings(raw map[string]*string) []setting {
	s := func(flagName, def, usage string) setting { return newSetting(raw, flagName, def, usage) }
	return []setting{
		s("health-interval", "2s", "readiness: how often Kafka, Postgres, ClickHouse and the trade server are probed"),
		s("ready-quote-max-age", "30s", "readiness: a gateway whose newest quote is older is not ready (0: no check)"),
		s("ready-projection-stall", "30s", "readiness: a projection behind the log that applied nothing for this long is stuck"),
		s("poison-attempts", "5", "times a message may fail the same way (its store reachable) before it is dead-lettered"),
	}
}

func loadHealth(get func(string) string) (Health, error) {
	var h Health
	var errs []error
	dur := func(name string, dst *time.Duration, zeroOK bool) {
		d, err := time.ParseDuration(get(name))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		case d < 0 || d == 0 && !zeroOK:
			errs = append(errs, fmt.Errorf("%s must be positive", name))
		}
		*dst = d
	}
	dur("health-interval", &h.Interval, false)
	dur("ready-quote-max-age", &h.QuoteMaxAge, true)
	dur("ready-projection-stall", &h.ProjectionStall, false)
	n, err := strconv.Atoi(get("poison-attempts"))
	if err != nil || n < 1 {
		errs = append(errs, fmt.Errorf("poison-attempts %q: want a whole number of at least 1", get("poison-attempts")))
	}
	h.PoisonAttempts = n
	return h, errors.Join(errs...)
}
