package sim

import (
	"testing"

	"tradesvc/infra/mt5/mt5test"
)

func TestSimulatorPassesThePortContract(t *testing.T) {
	mt5test.RunContract(t, func(t *testing.T) mt5test.Fixture {
		s, err := Open(Config{DataDir: t.TempDir(), RNGSeed: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return mt5test.Fixture{Server: s, Admin: s, Login: 1001, Symbol: "BTCUSD", Bid: "60000.00", Ask: "60015.00"}
	})
}
