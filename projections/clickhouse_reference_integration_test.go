package projections

import (
	"context"
	"testing"

	"tradesvc/events"
	"tradesvc/infra/testenv"
)

// The account dimension keeps each login's newest group and currency, writes a snapshot
// whose floating figures alone moved no second time, and never lets an older snapshot win.
func TestAccountDimensionKeepsTheNewestDimensionsOfEachAccount(t *testing.T) {
	ctx := context.Background()
	ch := testenv.MigratedCH(t)
	p, err := NewAccountDimension(ch)
	if err != nil {
		t.Fatal(err)
	}
	cent := snapshot(1004, "100.00", 2000)
	cent.Group, cent.Currency = "real\\cent-usc", "USC"
	apply := func(evs ...events.Event) {
		t.Helper()
		if err := p.Apply(ctx, msgs(evs...)); err != nil {
			t.Fatal(err)
		}
	}
	apply(snapshot(1001, "10000.00", 1000), cent, &events.ServerSpecified{Name: "sim", TimeZoneOffsetMinutes: 180, Time: 5})
	apply(snapshot(1001, "10001.00", 1500)) // a balance moved: nothing to write
	moved := snapshot(1001, "10001.00", 3000)
	moved.Group = "real\\vip"
	apply(moved)
	apply(snapshot(1001, "9.00", 2500)) // older than the stored one, from a replay overlap

	var rows uint64
	if err := ch.QueryRow(ctx, "SELECT count() FROM accounts WHERE login = 1001").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 3 {
		t.Errorf("%d rows written for 1001, want 3 (first, group change, the late older one)", rows)
	}
	got := map[int64]string{}
	r, err := ch.Query(ctx, "SELECT login, concat(grp, '/', currency) FROM accounts FINAL ORDER BY login")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for r.Next() {
		var login int64
		var v string
		if err := r.Scan(&login, &v); err != nil {
			t.Fatal(err)
		}
		got[login] = v
	}
	if got[1001] != "real\\vip/USD" || got[1004] != "real\\cent-usc/USC" || len(got) != 2 {
		t.Errorf("accounts %v", got)
	}
	var offset int32
	if err := ch.QueryRow(ctx, "SELECT time_zone_offset_minutes FROM trade_server FINAL WHERE id = 1").Scan(&offset); err != nil || offset != 180 {
		t.Errorf("trade server offset %d (%v), want 180", offset, err)
	}
}
