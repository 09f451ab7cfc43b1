package postgres

import (
	"reflect"
	"testing"
)

func TestOneRowTurnsArrayParametersIntoScalars(t *testing.T) {
	got := OneRow("$1::bigint[], $2::text[], $3::numeric[], $4::bytea[]", "x", "a, b, c, d")
	want := "(VALUES ($1::bigint, $2::text, $3::text::numeric, $4::bytea)) AS x(a, b, c, d)"
	if got != want {
		t.Fatalf("OneRow:\n got %s\nwant %s", got, want)
	}
	if got := Rows("$1::bigint[], $2::numeric[]", "x", "a, b", false); got != "unnest($1::bigint[], $2::numeric[]) AS x(a, b)" {
		t.Fatalf("Rows of arrays: %s", got)
	}
	if got := Rows("$1::bigint[], $2::numeric[]", "x", "a, b", true); got != "(VALUES ($1::bigint, $2::text::numeric)) AS x(a, b)" {
		t.Fatalf("Rows of one row: %s", got)
	}
}

func TestFirstOfTakesEachArraysFirstElementAndKeepsScalars(t *testing.T) {
	s := "x"
	got := FirstOf([]any{[]int64{7}, []*string{&s}, []*string{nil}, [][]byte{{1, 2}}, 2.5})
	want := []any{int64(7), &s, (*string)(nil), []byte{1, 2}, 2.5}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("FirstOf: got %#v, want %#v", got, want)
	}
}

func TestRowsStatementTakesItsOneRowFormForOneRow(t *testing.T) {
	s := NewRowsStatement(func(one bool) string { return "FROM " + Rows("$1::bigint[]", "x", "a", one) })
	if sql, args := s.For(1, []any{[]int64{7}}); sql != "FROM (VALUES ($1::bigint)) AS x(a)" || !reflect.DeepEqual(args, []any{int64(7)}) {
		t.Fatalf("one row: %s %v", sql, args)
	}
	if sql, args := s.For(2, []any{[]int64{7, 8}}); sql != s.SQL() || sql != "FROM unnest($1::bigint[]) AS x(a)" || len(args) != 1 {
		t.Fatalf("two rows: %s %v", sql, args)
	}
}
