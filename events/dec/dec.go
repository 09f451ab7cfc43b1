// Package dec holds the few helpers every layer needs around apd.Decimal: one arithmetic
// context, parsing that refuses what a price or a volume can never be, and fixed-point
// formatting for the wire. Every price, volume and amount in the service is an apd.Decimal;
// no float ever touches one.
//
// Failures are never silent. Quo reports division by zero and overflow as errors, because a
// divisor comes from data (a volume, a quote, a leverage) and can be zero. Add, Sub, Mul and
// Round cannot fail for the finite decimals the service holds (Parse and the event decoder
// refuse NaN and infinities; exponents stay within a few dozen of zero, far from apd's
// limits), so they keep a plain signature and check apd's condition anyway: a non-finite
// operand or an overflow is a broken invariant, and they panic naming the operation rather
// than carry a wrong number on.
package dec

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Precision is the number of significant digits of the service's arithmetic (decimal128).
const Precision = 34

// ctx is the arithmetic context of the service: Precision digits, half-even rounding where a
// result must be rounded. Every operation goes through it so that results never depend on
// which package computed them. It is unexported so that nobody can change it.
var ctx = apd.Context{
	Precision:   Precision,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Traps:       apd.DefaultTraps,
	Rounding:    apd.RoundHalfEven,
}

// Error is an arithmetic failure that callers can test for with errors.Is.
type Error string

func (e Error) Error() string { return string(e) }

const (
	// ErrDivisionByZero is returned by Quo for a zero divisor.
	ErrDivisionByZero Error = "dec: division by zero"
	// ErrOverflow is returned when a result does not fit apd's exponent range.
	ErrOverflow Error = "dec: overflow"
	// ErrNotFinite is returned for a NaN or infinite operand.
	ErrNotFinite Error = "dec: not a finite decimal"
)

// Parse reads a plain decimal string ("1.2345", "-3", "0.10"). It refuses exponents, NaN,
// infinities, signs other than a leading minus, and empty input, so that request parameters
// and seed files accept only what a person would write for a price or a volume.
func Parse(s string) (apd.Decimal, error) {
	var d apd.Decimal
	if s == "" {
		return d, fmt.Errorf("empty decimal")
	}
	body := strings.TrimPrefix(s, "-")
	if body == "" || strings.Count(body, ".") > 1 || body[0] == '.' || body[len(body)-1] == '.' {
		return d, fmt.Errorf("malformed decimal %q", s)
	}
	for i := 0; i < len(body); i++ {
		if c := body[i]; (c < '0' || c > '9') && c != '.' {
			return d, fmt.Errorf("malformed decimal %q", s)
		}
	}
	if len(body) > 40 {
		return d, fmt.Errorf("decimal %q has too many digits", s)
	}
	if _, _, err := d.SetString(s); err != nil {
		return d, fmt.Errorf("malformed decimal %q: %w", s, err)
	}
	return d, nil
}

// MustParse is Parse for constants in code and tests; it panics on bad input.
func MustParse(s string) apd.Decimal {
	d, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return d
}

// New returns coeff * 10^exp, for building decimals from integers without strings.
func New(coeff int64, exp int32) apd.Decimal {
	var d apd.Decimal
	d.SetFinite(coeff, exp)
	return d
}

// CheckFinite returns ErrNotFinite for NaN and infinities (decoders call it on what they read).
func CheckFinite(d apd.Decimal) error {
	if d.Form != apd.Finite {
		return fmt.Errorf("%w: %s", ErrNotFinite, d.String())
	}
	return nil
}

// Fixed formats d with exactly places digits after the point, rounding half-even when d
// has more. It is how decimals leave the service: "1.10000" for a 5-digit symbol. A
// non-finite d (which the service never holds) is written as apd spells it ("NaN").
func Fixed(d apd.Decimal, places int32) string {
	if d.Form != apd.Finite {
		return d.String()
	}
	q := Round(d, places)
	if q.IsZero() {
		q.Negative = false
	}
	return q.Text('f')
}

// String formats d in plain notation (no exponent) with its own precision.
func String(d apd.Decimal) string { return d.Text('f') }

// Cmp compares a and b: -1, 0 or +1.
func Cmp(a, b apd.Decimal) int { return a.Cmp(&b) }

// IsMultiple reports whether d is an integer multiple of step (step > 0). A d so large
// against step that the quotient has more than Precision digits is not a multiple a
// request can use, and is reported as none.
func IsMultiple(d, step apd.Decimal) bool {
	if step.IsZero() {
		return true
	}
	var rem apd.Decimal
	if _, err := ctx.Rem(&rem, &d, &step); err != nil {
		return false
	}
	return rem.IsZero()
}

// Add returns a+b, exact up to Precision digits (rounded half-even beyond).
func Add(a, b apd.Decimal) apd.Decimal {
	var r apd.Decimal
	cond, err := ctx.Add(&r, &a, &b)
	must("Add", a, b, r, cond, err)
	return r
}

// Sub returns a-b, exact up to Precision digits (rounded half-even beyond).
func Sub(a, b apd.Decimal) apd.Decimal {
	var r apd.Decimal
	cond, err := ctx.Sub(&r, &a, &b)
	must("Sub", a, b, r, cond, err)
	return r
}

// Mul returns a*b, exact up to Precision digits (rounded half-even beyond).
func Mul(a, b apd.Decimal) apd.Decimal {
	var r apd.Decimal
	cond, err := ctx.Mul(&r, &a, &b)
	must("Mul", a, b, r, cond, err)
	return r
}

// Quo returns a/b rounded half-even to Precision digits. It fails with ErrDivisionByZero
// when b is zero, ErrOverflow when the quotient leaves apd's range, and ErrNotFinite for a
// NaN or infinite operand: callers decide what a failed division means for them.
func Quo(a, b apd.Decimal) (apd.Decimal, error) {
	var r apd.Decimal
	if a.Form != apd.Finite || b.Form != apd.Finite {
		return r, fmt.Errorf("%w: %s / %s", ErrNotFinite, a.String(), b.String())
	}
	if b.IsZero() {
		return r, fmt.Errorf("%w: %s / 0", ErrDivisionByZero, a.String())
	}
	cond, err := ctx.Quo(&r, &a, &b)
	if err != nil || cond.Overflow() || cond.Underflow() || r.Form != apd.Finite {
		return apd.Decimal{}, fmt.Errorf("%w: %s / %s (%s)", ErrOverflow, a.String(), b.String(), cond.String())
	}
	return r, nil
}

// MustQuo is Quo for a divisor the caller has already checked is not zero (a leverage
// validated positive, a volume tested non-zero just before): what is left, an overflow or a
// non-finite operand, is a broken invariant, and it panics as Mul does.
func MustQuo(a, b apd.Decimal) apd.Decimal {
	r, err := Quo(a, b)
	if err != nil {
		panic(fmt.Sprintf("dec: MustQuo(%s, %s): %v", a.String(), b.String(), err))
	}
	return r
}

// Round returns d rounded half-even to places decimal places. It never loses integer
// digits: the rounding uses as many significant digits as the result needs, so it cannot
// fail for a finite d.
func Round(d apd.Decimal, places int32) apd.Decimal {
	c := ctx
	// Digits of the result: the integer digits of d plus places (and one for a carry).
	if need := int64(d.NumDigits()) + int64(d.Exponent) + int64(places) + 1; need > int64(c.Precision) {
		c.Precision = uint32(need)
	}
	var r apd.Decimal
	cond, err := c.Quantize(&r, &d, -places)
	must("Round", d, New(int64(places), 0), r, cond, err)
	return r
}

// Neg returns -d.
func Neg(d apd.Decimal) apd.Decimal {
	var r apd.Decimal
	r.Neg(&d)
	return r
}

// must panics when an operation that cannot fail for finite operands did: an operand was
// not finite (a boundary let NaN or an infinity in) or the result left apd's exponent range.
func must(op string, a, b, r apd.Decimal, cond apd.Condition, err error) {
	if err == nil && r.Form == apd.Finite && a.Form == apd.Finite && b.Form == apd.Finite && !cond.Overflow() {
		return
	}
	if err == nil {
		err = fmt.Errorf("condition %q", cond.String())
	}
	panic(fmt.Sprintf("dec: %s(%s, %s) broke the finite-decimal invariant: %v", op, a.String(), b.String(), err))
}
