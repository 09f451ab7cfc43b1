package clickhouse_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
	"tradesvc/infra/clickhouse"
	"tradesvc/infra/testenv"
)

func openTestDB(t *testing.T) driver.Conn {
	t.Helper()
	conn, err := clickhouse.Open(context.Background(), clickhouse.Config{Addr: testenv.CH(t), Database: testenv.CHDatabase(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Open creates the configured database when it does not exist yet (a fresh machine).
func TestOpen_CreatesMissingDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := testenv.Name(t)
	conn, err := clickhouse.Open(ctx, clickhouse.Config{Addr: testenv.CH(t), Database: name})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	defer conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name)

	var current string
	if err := conn.QueryRow(ctx, "SELECT currentDatabase()").Scan(&current); err != nil {
		t.Fatal(err)
	}
	if current != name {
		t.Fatalf("connected to %q, want %q", current, name)
	}
	// Opening again (database exists) is fine.
	again, err := clickhouse.Open(ctx, clickhouse.Config{Addr: testenv.CH(t), Database: name})
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
}

// Migrations run once each: a second run applies nothing, and a new file is picked up.
func TestMigrate_AppliesOnceAndPicksUpNewFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := openTestDB(t)

	fsys := fstest.MapFS{
		"0001_deals.sql": {Data: []byte(`-- a table shaped like the deals history
CREATE TABLE IF NOT EXISTS deals_t (
    deal_id Int64,
    login   Int64,
    symbol  String,
    price   Decimal(18, 5),
    time_ms Int64
) ENGINE = MergeTree() ORDER BY (login, deal_id);
CREATE TABLE IF NOT EXISTS other_t (x UInt8) ENGINE = MergeTree() ORDER BY x;
`)},
	}
	for run, want := range [][]int{{1}, nil} {
		got, err := clickhouse.MigrateFS(ctx, conn, fsys)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("run %d applied %v, want %v", run, got, want)
		}
	}
	// A migration interrupted after its ALTER ran but before it was recorded runs again:
	// 18.16 has no ADD COLUMN IF NOT EXISTS, and the runner must still get through.
	fsys["0002_column.sql"] = &fstest.MapFile{Data: []byte("ALTER TABLE deals_t ADD COLUMN volume Decimal(18, 5);\nALTER TABLE deals_t ADD COLUMN fee Decimal(18, 5);\n")}
	if err := conn.Exec(ctx, "ALTER TABLE deals_t ADD COLUMN volume Decimal(18, 5)"); err != nil {
		t.Fatal(err)
	}
	got, err := clickhouse.MigrateFS(ctx, conn, fsys)
	if err != nil || !slices.Equal(got, []int{2}) {
		t.Fatalf("third run applied %v (err %v), want [2]", got, err)
	}
	var tables uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = currentDatabase() AND name IN ('deals_t', 'other_t')").Scan(&tables); err != nil || tables != 2 {
		t.Fatalf("tables created: %d (err %v), want 2", tables, err)
	}
	// The embedded set runs too (it may be empty until the read-model tables are added).
	if err := clickhouse.Migrate(ctx, conn); err != nil {
		t.Fatal(err)
	}
}

// The path a projection takes on ClickHouse 18.16: a batch INSERT naming its columns,
// Decimal(18, 5) values bound from apd and read back into apd exactly (scale kept), and a
// server-side aggregate over them.
func TestBatchInsert_NamedColumnsAndApdDecimalRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := openTestDB(t)
	if err := conn.Exec(ctx, `CREATE TABLE deals_t (
		deal_id Int64, login Int64, symbol String, price Decimal(18, 5), volume Decimal(18, 5), time_ms Int64
	) ENGINE = MergeTree() ORDER BY (login, deal_id)`); err != nil {
		t.Fatal(err)
	}

	const rows = 1000
	batch, err := conn.PrepareBatch(ctx, "INSERT INTO deals_t (deal_id, login, symbol, price, volume, time_ms)")
	if err != nil {
		t.Fatal(err)
	}
	var want apd.Decimal
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()
	for i := range rows {
		// 1.10000, 1.10001, ... and a negative one, to cover the sign.
		price := dec.New(110000+int64(i), -5)
		if i == 7 {
			price = dec.MustParse("-0.00001")
		}
		volume := dec.MustParse("0.01")
		p, err := clickhouse.DecimalArg(&price, 18, 5)
		if err != nil {
			t.Fatal(err)
		}
		v, err := clickhouse.DecimalArg(&volume, 18, 5)
		if err != nil {
			t.Fatal(err)
		}
		if err := batch.Append(int64(i+1), int64(1001+i%3), "EURUSD", p, v, base+int64(i)); err != nil {
			t.Fatal(err)
		}
		want = dec.Add(want, price)
	}
	if err := batch.Send(); err != nil {
		t.Fatal(err)
	}

	var count uint64
	var sum apd.Decimal
	if err := conn.QueryRow(ctx, "SELECT count(), sum(price) FROM deals_t").Scan(&count, clickhouse.DecimalDest(&sum)); err != nil {
		t.Fatal(err)
	}
	if count != rows {
		t.Fatalf("count = %d, want %d", count, rows)
	}
	if sum.Cmp(&want) != 0 {
		t.Fatalf("sum(price) = %s, want %s", sum.String(), want.String())
	}

	var price, volume apd.Decimal
	var timeMs int64
	if err := conn.QueryRow(ctx, "SELECT price, volume, time_ms FROM deals_t WHERE deal_id = 1").Scan(
		clickhouse.DecimalDest(&price), clickhouse.DecimalDest(&volume), &timeMs); err != nil {
		t.Fatal(err)
	}
	if price.Text('f') != "1.10000" || volume.Text('f') != "0.01000" || timeMs != base {
		t.Fatalf("row 1 = %s, %s, %d; want 1.10000, 0.01000, %d", price.Text('f'), volume.Text('f'), timeMs, base)
	}
	var neg apd.Decimal
	if err := conn.QueryRow(ctx, "SELECT price FROM deals_t WHERE deal_id = 8").Scan(clickhouse.DecimalDest(&neg)); err != nil {
		t.Fatal(err)
	}
	if neg.Text('f') != "-0.00001" {
		t.Fatalf("negative price came back as %s", neg.Text('f'))
	}
}

func TestDecimalArg_RefusesRoundingAndOverflow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in string
		ok bool
	}{
		{"1.12345", true},
		{"1.1234500000", true}, // trailing zeros are not precision
		{"-42", true},
		{"9999999999999.99999", true}, // 13 integer digits fit Decimal(18, 5)
		{"1.123456", false},           // would be truncated
		{"10000000000000", false},     // 14 integer digits
	}
	for _, c := range cases {
		d := dec.MustParse(c.in)
		got, err := clickhouse.DecimalArg(&d, 18, 5)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.in, err, c.ok)
			continue
		}
		if c.ok {
			back := clickhouse.DecimalFromDriver(got)
			if back.Cmp(&d) != 0 {
				t.Errorf("%s: round trip gave %s", c.in, back.String())
			}
		}
	}
	nan := apd.Decimal{Form: apd.NaN}
	if _, err := clickhouse.DecimalArg(&nan, 18, 5); err == nil {
		t.Error("NaN accepted")
	}
}

func TestSplitStatements(t *testing.T) {
	t.Parallel()
	got := clickhouse.SplitStatements("-- comment;\nCREATE TABLE a (s String DEFAULT 'x;y') ENGINE = TinyLog;\n\nSELECT 1\n;\nSELECT 2")
	want := []string{"CREATE TABLE a (s String DEFAULT 'x;y') ENGINE = TinyLog", "SELECT 1", "SELECT 2"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestConfig_Validate(t *testing.T) {
	t.Parallel()
	if (clickhouse.Config{Addr: "127.0.0.1:9000", Database: "tradesvc"}).Validate() != nil {
		t.Error("valid config refused")
	}
	for _, c := range []clickhouse.Config{{Database: "x"}, {Addr: "a:1", Database: "x; DROP"}, {Addr: "a:1"}} {
		if c.Validate() == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}
