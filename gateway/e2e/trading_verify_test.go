package e2e_test

import (
	"context"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/infra/testenv"
)

// testReplayVerify rebuilds the trading read models from everything the trading tests wrote
// to the log (fills, partial closes, sweeps, pending orders that triggered and expired,
// refusals, faults, a thousand concurrent retries) as `tradesvc replay --verify` does, and
// requires them equal to the live ones row for row.
func testReplayVerify(t *testing.T, e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := app.VerifyReplay(ctx, e.svc.Config, testenv.Logger(), app.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range rep.Differences {
		t.Error(d.String())
	}
	if !rep.Equal || rep.EventsApplied == 0 {
		t.Fatalf("replay verify: equal %v after %d events (positions from %s)", rep.Equal, rep.EventsApplied, rep.PositionsFrom)
	}
	for _, tb := range rep.Tables {
		if tb.Live != tb.Replayed || tb.Live == 0 {
			t.Errorf("%s: %d live rows, %d replayed", tb.Table, tb.Live, tb.Replayed)
		}
	}
}
