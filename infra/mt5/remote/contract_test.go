package remote

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/infra/mt5/mt5test"
	"tradesvc/infra/mt5/sim"
)

// wireAdmin drives the contract's admin hooks through the remote admin API too, so that
// nothing in the contract run reaches the simulator except over the wire.
type wireAdmin struct{ a *AdminClient }

func (w wireAdmin) SetQuote(symbol string, bid, ask apd.Decimal) error {
	_, err := w.a.SetQuote(context.Background(), symbol, bid, ask)
	return err
}

func (w wireAdmin) Deposit(login int64, amount apd.Decimal) (int64, error) {
	r, err := w.a.Deposit(context.Background(), login, amount)
	return r.Deal, err
}

func (w wireAdmin) SetAccountTradeAllowed(login int64, allowed bool) error {
	_, err := w.a.SetAccountTradeAllowed(context.Background(), login, allowed)
	return err
}

// TestRemoteClientPassesThePortContract runs the simulator's contract suite against
// remote.Client -> HTTP over a loopback listener -> remote.Server -> simulator.
func TestRemoteClientPassesThePortContract(t *testing.T) {
	mt5test.RunContract(t, func(t *testing.T) mt5test.Fixture {
		s, err := sim.Open(sim.Config{DataDir: t.TempDir(), RNGSeed: 1, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		srv := httptest.NewServer(NewServer(ServerConfig{Port: s, Admin: s, Token: testToken}))
		t.Cleanup(srv.Close)
		// A short poll wait makes the suite exercise empty long polls and their renewal.
		c, err := NewClient(ClientConfig{Addr: srv.Listener.Addr().String(), Token: testToken, PollWait: 150 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return mt5test.Fixture{Server: c, Admin: wireAdmin{c.Admin()}, Login: 1001, Symbol: "BTCUSD", Bid: "60000.00", Ask: "60015.00"}
	})
}
