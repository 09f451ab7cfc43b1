package perkey

import (
	"testing"

	"tradesvc/infra/leakcheck"
)

// TestMain fails the package's tests when they leave a goroutine running.
func TestMain(m *testing.M) { leakcheck.Main(m) }
