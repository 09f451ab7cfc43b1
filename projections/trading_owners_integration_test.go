package projections

import (
	"context"
	"testing"
	"time"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka/batch"
)

// A relay's deal whose operation the projection has not applied yet waits for it even when it
// is seconds old (under load the consumers of the command and outcome topics fall seconds
// behind the relay's), so that its DEAL row carries the client order id of the key that placed
// it; with a 2 s wait, such deals went without C.
func TestTradingProjectionALateDealWaitsForItsOperationSoItsFrameCarriesC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := newFreshProjection(t, nil)
	const login = 7101
	z := dec.MustParse("0")
	deal := &events.DealAdded{Fact: events.Fact{Seq: 1, Login: login}, DealID: 801, OrderID: 800, PositionID: 800,
		Symbol: "EURUSD", Volume: dec.MustParse("1"), Price: dec.MustParse("1.1"), Profit: z, Commission: z, Swap: z,
		Comment: "hi#LATE01", Time: trT0 + 1000}
	appended := time.Now().Add(-5 * time.Second).UnixMilli()
	done := make(chan error, 1)
	go func() {
		done <- f.p.Apply(ctx, []batch.Message{{Envelope: events.Envelope{Type: deal.EventType(), OccurredAt: appended}, Event: deal}})
	}()
	select {
	case err := <-done:
		t.Fatalf("the 5 s old deal was applied before its operation (err %v)", err)
	case <-time.After(700 * time.Millisecond):
	}
	cmd := marketOrder(login, "op-late", "#LATE01", "1", 1)
	if err := f.apply(t, batch.Message{Envelope: events.Envelope{Type: cmd.EventType()}, Event: cmd}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the deal, once its operation was applied: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the deal still waits after its operation was applied")
	}
	var coid string
	var key int64
	if err := f.pool.QueryRow(ctx, `SELECT coalesce(client_order_id, ''), coalesce(api_key_id, 0) FROM rm.changes
		WHERE login = $1 AND kind = 'DEAL'`, login).Scan(&coid, &key); err != nil {
		t.Fatal(err)
	}
	if coid != "coid-op-late" || key != trAPIKey {
		t.Fatalf("the DEAL row names client order id %q of key %d; want %q of key %d", coid, key, "coid-op-late", trAPIKey)
	}
}
