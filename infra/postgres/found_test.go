package postgres

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestFoundTellsNoRowFromAFailure(t *testing.T) {
	if v, ok, err := Found(7, nil, "read"); v != 7 || !ok || err != nil {
		t.Fatalf("a row: %v %v %v", v, ok, err)
	}
	if v, ok, err := Found(7, pgx.ErrNoRows, "read"); v != 0 || ok || err != nil {
		t.Fatalf("no row: %v %v %v", v, ok, err)
	}
	cause := errors.New("connection reset")
	if v, ok, err := Found(7, cause, "read x"); v != 0 || ok || !errors.Is(err, cause) || err.Error() != "read x: connection reset" {
		t.Fatalf("a failure: %v %v %v", v, ok, err)
	}
}
