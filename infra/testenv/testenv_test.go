package testenv_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"tradesvc/infra/testenv"
)

// fatalRecorder stands in for testing.T to observe a Fatalf without ending the real test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// A missing variable fails the test with the instruction to run via make test (no skip).
func TestMissingVariableFailsWithInstruction(t *testing.T) {
	t.Setenv(testenv.EnvPG, "")
	rec := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != nil && r != rec {
				panic(r)
			}
		}()
		testenv.PG(rec)
	}()
	if !strings.Contains(rec.msg, "run via make test") {
		t.Fatalf("message %q does not say to run via make test", rec.msg)
	}
}

// PGDatabase gives a usable database of its own and drops it when the test ends.
func TestPGDatabaseIsDroppedAfterTheTest(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("inner", func(t *testing.T) {
		url := testenv.PGDatabase(t)
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, "t_") {
			t.Fatalf("connected to %q, not a test database", name)
		}
	})
	conn, err := pgx.Connect(ctx, testenv.PG(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Fatalf("database %s survived its test", name)
	}
}

// PGSchema connections land in the test's own schema.
func TestPGSchemaSetsSearchPath(t *testing.T) {
	ctx := context.Background()
	url, schema := testenv.PGSchema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE x (id int)"); err != nil {
		t.Fatal(err)
	}
	var got string
	if err := conn.QueryRow(ctx, "SELECT table_schema FROM information_schema.tables WHERE table_name = 'x' AND table_schema = $1", schema).Scan(&got); err != nil {
		t.Fatalf("table not created in %s: %v", schema, err)
	}
}
