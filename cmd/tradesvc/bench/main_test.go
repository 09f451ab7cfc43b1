package bench

import (
	"testing"

	"tradesvc/infra/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }
