package dec

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/apd/v3"
)

func TestParseRefusesWhatIsNotAPlainDecimal(t *testing.T) {
	for _, s := range []string{"", "-", "1e5", "NaN", "Infinity", "+1", "1.2.3", ".5", "5.", "0x10", " 1", "1,5"} {
		if _, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
	for s, want := range map[string]string{"1.2345": "1.2345", "-3": "-3", "0.10": "0.10", "100": "100"} {
		d, err := Parse(s)
		if err != nil || String(d) != want {
			t.Errorf("Parse(%q) = %s, %v; want %s", s, String(d), err, want)
		}
	}
}

func TestFixedRoundsHalfEvenToPlaces(t *testing.T) {
	cases := []struct {
		in     string
		places int32
		want   string
	}{
		{"1.1", 5, "1.10000"}, {"1.123455", 5, "1.12346"}, {"1.123465", 5, "1.12346"},
		{"-0.00001", 2, "0.00"}, {"10000", 4, "10000.0000"},
	}
	for _, c := range cases {
		if got := Fixed(MustParse(c.in), c.places); got != c.want {
			t.Errorf("Fixed(%s,%d) = %s, want %s", c.in, c.places, got, c.want)
		}
	}
}

func TestIsMultiple(t *testing.T) {
	if !IsMultiple(MustParse("0.30"), MustParse("0.01")) || IsMultiple(MustParse("0.015"), MustParse("0.01")) {
		t.Fatal("IsMultiple wrong")
	}
}

func TestQuoByZeroIsAnErrorNotInfinity(t *testing.T) {
	q, err := Quo(New(5, 0), apd.Decimal{})
	if !errors.Is(err, ErrDivisionByZero) {
		t.Fatalf("5 / 0 = %s, %v; want ErrDivisionByZero", q.String(), err)
	}
	if q.Form != apd.Finite || !q.IsZero() {
		t.Fatalf("5 / 0 returned %s beside its error; want the zero value", q.String())
	}
	if _, err := Quo(apd.Decimal{}, apd.Decimal{}); !errors.Is(err, ErrDivisionByZero) {
		t.Fatalf("0 / 0: %v, want ErrDivisionByZero", err)
	}
}

func TestQuoOverflowIsAnError(t *testing.T) {
	huge := New(9, apd.MaxExponent-1)
	tiny := New(1, apd.MinExponent+1)
	if q, err := Quo(huge, tiny); !errors.Is(err, ErrOverflow) {
		t.Fatalf("9e%d / 1e%d = %s, %v; want ErrOverflow", apd.MaxExponent-1, apd.MinExponent+1, q.String(), err)
	}
}

func TestQuoRefusesNonFiniteOperands(t *testing.T) {
	var inf apd.Decimal
	inf.Form = apd.Infinite
	if _, err := Quo(inf, New(2, 0)); !errors.Is(err, ErrNotFinite) {
		t.Fatalf("Infinity / 2: %v, want ErrNotFinite", err)
	}
}

func TestQuoRoundsToPrecision(t *testing.T) {
	q, err := Quo(New(1, 0), New(3, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := q.String(), "0."+strings.Repeat("3", Precision); got != want {
		t.Fatalf("1/3 = %s, want %s", got, want)
	}
}

func TestMulOverflowPanicsInsteadOfReturningInfinity(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil {
			t.Fatal("Mul overflowed without a panic")
		}
		if !strings.Contains(fmt.Sprint(r), "Mul") {
			t.Fatalf("panic %q does not name the operation", r)
		}
	}()
	huge := New(9, apd.MaxExponent-1)
	r := Mul(huge, huge)
	t.Fatalf("Mul(9e%d, 9e%d) = %s", apd.MaxExponent-1, apd.MaxExponent-1, r.String())
}

func TestAddOfNaNPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Add of NaN did not panic")
		}
	}()
	var nan apd.Decimal
	nan.Form = apd.NaN
	Add(nan, New(1, 0))
}

func TestRoundNeverLosesIntegerDigits(t *testing.T) {
	// 36 integer digits rounded to 2 places needs 38 significant digits, more than the
	// context's 34: Round widens its precision instead of failing.
	d := MustParse(strings.Repeat("9", 36) + ".125")
	if got, want := String(Round(d, 2)), strings.Repeat("9", 36)+".12"; got != want {
		t.Fatalf("Round = %s, want %s", got, want)
	}
	if got := Fixed(d, 1); got != strings.Repeat("9", 36)+".1" {
		t.Fatalf("Fixed = %s", got)
	}
}

func TestCheckFinite(t *testing.T) {
	var nan apd.Decimal
	nan.Form = apd.NaN
	if err := CheckFinite(nan); !errors.Is(err, ErrNotFinite) {
		t.Fatalf("CheckFinite(NaN) = %v", err)
	}
	if err := CheckFinite(New(1, -2)); err != nil {
		t.Fatalf("CheckFinite(0.01) = %v", err)
	}
}
