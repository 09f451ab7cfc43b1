package check

import (
	"errors"
	"strings"
	"testing"
)

func TestProblemsReportsEveryRecordedProblemAndNothingElse(t *testing.T) {
	var p Problems
	if p.Err() != nil {
		t.Fatalf("no problem recorded: %v", p.Err())
	}
	p.If(false, "not a problem")
	p.Add(nil)
	if p.Err() != nil {
		t.Fatalf("false conditions and nil errors are not problems: %v", p.Err())
	}
	cause := errors.New("second")
	p.If(true, "first")
	p.Add(cause)
	err := p.Err()
	if err == nil || !errors.Is(err, cause) || !strings.Contains(err.Error(), "first") || strings.Contains(err.Error(), "not a problem") {
		t.Fatalf("Err() = %v, want first and second joined", err)
	}
}

func TestPositiveOrKeepsPositiveSettingsAndDefaultsTheRest(t *testing.T) {
	for _, c := range []struct{ v, want int }{{5, 5}, {1, 1}, {0, 7}, {-3, 7}} {
		if got := PositiveOr(c.v, 7); got != c.want {
			t.Fatalf("PositiveOr(%d, 7) = %d, want %d", c.v, got, c.want)
		}
	}
}
