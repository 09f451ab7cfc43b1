package projections

import (
	"context"
	"errors"
	"maps"
	"testing"

	"github.com/jackc/pgx/v5"

	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/testenv"
)

// at is messages of topic t's partition part at offsets.
func at(part int32, offsets ...int64) []batch.Message {
	out := make([]batch.Message, len(offsets))
	for i, o := range offsets {
		out[i] = batch.Message{Topic: "t", Partition: part, Offset: o}
	}
	return out
}

// TestPositionsMoveOnlyFromWhereTheStoreStands drives both forms of the check-and-advance
// (the set-wise statement of several partitions or a first position, the keyed UPDATE of one
// stored position) against Postgres: each moves a position only from where this process
// left it; a position another writer moved rolls the whole transaction back and resumes from
// the store.
func TestPositionsMoveOnlyFromWhereTheStoreStands(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	const name = "test.positions"
	want := func(step string, exp map[int32]int64) {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT partition, next_offset FROM rm.projection_offsets WHERE projection = $1 AND topic = 't'`, name)
		if err != nil {
			t.Fatal(err)
		}
		got := map[int32]int64{}
		var part int32
		var next int64
		if _, err := pgx.ForEachRow(rows, []any{&part, &next}, func() error { got[part] = next; return nil }); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, exp) {
			t.Fatalf("%s: stored positions %v, want %v", step, got, exp)
		}
	}
	apply := func(p *Positions, msgs ...[]batch.Message) error {
		var all []batch.Message
		for _, m := range msgs {
			all = append(all, m...)
		}
		return applyPositioned(ctx, pool, p, all, &pgx.Batch{})
	}

	p := NewPositions(pool, name)
	if err := apply(p, at(0, 0, 1, 2), at(1, 0)); err != nil {
		t.Fatal(err)
	}
	want("first positions", map[int32]int64{0: 3, 1: 1})
	if err := apply(p, at(0, 3, 4), at(1, 1)); err != nil {
		t.Fatal(err)
	}
	want("stored positions moved", map[int32]int64{0: 5, 1: 2})
	// A redelivery of what was applied moves nothing and fails nothing.
	if err := apply(p, at(0, 3, 4)); err != nil {
		t.Fatal(err)
	}
	want("a redelivery", map[int32]int64{0: 5, 1: 2})

	// Another writer (a projector that took the partition over) moved partition 0 on.
	if _, err := pool.Exec(ctx, `UPDATE rm.projection_offsets SET next_offset = 9 WHERE projection = $1 AND topic = 't' AND partition = 0`, name); err != nil {
		t.Fatal(err)
	}
	err := apply(p, at(0, 5), at(1, 2))
	if !errors.Is(err, errPositionsMoved) || !errors.Is(err, batch.ErrResume) {
		t.Fatalf("an advance from where the store no longer stands: %v, want errPositionsMoved and batch.ErrResume", err)
	}
	want("the failed advance rolled back", map[int32]int64{0: 9, 1: 2})
	// The next attempt starts from the store: offset 5 of partition 0 is behind it.
	if err := apply(p, at(0, 5), at(1, 2)); err != nil {
		t.Fatal(err)
	}
	want("resumed from the store", map[int32]int64{0: 9, 1: 3})

	// A second process that knows nothing reads the store, and a first position of a new
	// partition goes with moved ones in one transaction.
	q := NewPositions(pool, name)
	if err := apply(q, at(0, 9), at(1, 3), at(2, 0)); err != nil {
		t.Fatal(err)
	}
	want("a new process", map[int32]int64{0: 10, 1: 4, 2: 1})
	// The first process's memory is now behind the store: its advance fails, changes nothing.
	err = apply(p, at(1, 3))
	if !errors.Is(err, errPositionsMoved) {
		t.Fatalf("an advance from a position another process moved: %v, want errPositionsMoved", err)
	}
	want("the stale advance rolled back", map[int32]int64{0: 10, 1: 4, 2: 1})
}

// TestPositionsFindTheStoreBehindWhatTheyCommitted plays what a crash of Postgres does to a
// writer that commits asynchronously: the store stands some commits back. check finds the
// partition behind what this process committed, forgets it and closes Rewound (the consumer
// ends its session) once; a batch of the old session, which reads the position from the
// store, finds it below what this process committed and is refused as moved (it would go on
// past what was taken back); the batch from the stored position applies; and a new session's
// Load calls OnLoad first.
func TestPositionsFindTheStoreBehindWhatTheyCommitted(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	const name = "test.rewound"
	stored := func() int64 {
		t.Helper()
		var next int64
		if err := pool.QueryRow(ctx, `SELECT next_offset FROM rm.projection_offsets WHERE projection = $1 AND topic = 't' AND partition = 0`,
			name).Scan(&next); err != nil {
			t.Fatal(err)
		}
		return next
	}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	p := NewPositions(pool, name)
	loads := 0
	p.OnLoad(func() { loads++ })
	if _, err := p.Load(ctx, "t", []int32{0}); err != nil || loads != 1 {
		t.Fatalf("Load: %v, OnLoad called %d times, want once", err, loads)
	}
	if err := applyPositioned(ctx, pool, p, at(0, 0, 1, 2), &pgx.Batch{}); err != nil {
		t.Fatal(err)
	}
	rewound := p.Rewound()
	if behind, err := p.check(ctx); err != nil || len(behind) != 0 || closed(rewound) {
		t.Fatalf("check with the store where this process left it: behind %v (%v), rewound %v", behind, err, closed(rewound))
	}

	// The crash took back the last commit: the store stands at 1, this process wrote 3.
	if _, err := pool.Exec(ctx, `UPDATE rm.projection_offsets SET next_offset = 1 WHERE projection = $1`, name); err != nil {
		t.Fatal(err)
	}
	behind, err := p.check(ctx)
	if err != nil || len(behind) != 1 || behind[0] != "t/0" || !closed(rewound) {
		t.Fatalf("check with the store behind: behind %v (%v), rewound %v; want t/0 and the channel closed", behind, err, closed(rewound))
	}
	if closed(p.Rewound()) {
		t.Fatal("Rewound after the rewind: a closed channel, want a new one")
	}
	if behind, err := p.check(ctx); err != nil || len(behind) != 0 || closed(p.Rewound()) {
		t.Fatalf("check again before the next session loads the partition: behind %v (%v); want nothing new", behind, err)
	}
	// The session that had moved on would apply offset 3 next; the store says 1.
	err = applyPositioned(ctx, pool, p, at(0, 3), &pgx.Batch{})
	if !errors.Is(err, errPositionsMoved) || !errors.Is(err, batch.ErrResume) {
		t.Fatalf("a batch past the stored position: %v, want errPositionsMoved and batch.ErrResume", err)
	}
	if got := stored(); got != 1 {
		t.Fatalf("the refused batch moved the stored position to %d", got)
	}
	// The next session starts from the store: offsets 1 and 2 again, then 3.
	if _, err := p.Load(ctx, "t", []int32{0}); err != nil || loads != 2 {
		t.Fatalf("Load: %v, OnLoad called %d times, want twice", err, loads)
	}
	if err := applyPositioned(ctx, pool, p, at(0, 1, 2, 3), &pgx.Batch{}); err != nil {
		t.Fatal(err)
	}
	if got := stored(); got != 4 {
		t.Fatalf("stored position %d after the batch from the store, want 4", got)
	}
}

// TestPositionsReadAfterAFailureStopBelowWhatWasCommitted: after a failed transaction the
// process reads its position from the store again, and goes on from it (messages it never
// applied, parked ones say, stay behind it), unless the store stands below what this process
// had committed: then the store took commits back, and the batch is refused as moved.
func TestPositionsReadAfterAFailureStopBelowWhatWasCommitted(t *testing.T) {
	ctx := context.Background()
	pool := testenv.MigratedPG(t)
	const name = "test.floor"
	p := NewPositions(pool, name)
	if err := applyPositioned(ctx, pool, p, at(0, 0, 1, 2), &pgx.Batch{}); err != nil {
		t.Fatal(err)
	}
	fail := func(offset int64) {
		t.Helper()
		b := &pgx.Batch{}
		b.Queue(`SELECT 1 / 0`)
		if err := applyPositioned(ctx, pool, p, at(0, offset), b); err == nil || errors.Is(err, batch.ErrResume) {
			t.Fatalf("a failing statement: %v, want a plain failure", err)
		}
	}
	fail(3)
	// Offset 3 was parked: the next batch starts at 4, the store stands at 3, as committed.
	if err := applyPositioned(ctx, pool, p, at(0, 4), &pgx.Batch{}); err != nil {
		t.Fatalf("a batch past a parked message: %v", err)
	}
	fail(5)
	if _, err := pool.Exec(ctx, `UPDATE rm.projection_offsets SET next_offset = 2 WHERE projection = $1`, name); err != nil {
		t.Fatal(err)
	}
	err := applyPositioned(ctx, pool, p, at(0, 5), &pgx.Batch{})
	if !errors.Is(err, errPositionsMoved) || !errors.Is(err, batch.ErrResume) {
		t.Fatalf("the store below what this process committed (5): %v, want errPositionsMoved and batch.ErrResume", err)
	}
}
