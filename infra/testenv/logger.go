package testenv

import (
	"log/slog"
	"os"
)

// Logger returns a logger for components under test. It writes warnings and errors to
// stderr rather than to testing.T, because library goroutines (sarama, watermill) may still
// log briefly after a test has returned, which testing.T turns into a panic.
func Logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
