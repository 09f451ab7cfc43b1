// Package dec holds the few helpers every layer needs around apd.Decimal: one arithmetic
// context, parsing that refuses what a price or a volume can never be, and fixed-point
// formatting for the wire. Every price, volume and amount in the service is an apd.Decimal;
// no float ever touches one.
package dec

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// Ctx is the arithmetic context of the service: 34 significant digits (decimal128), half-even
// rounding where a result must be rounded to a precision. Use it for every operation so that
// results never depend on which package computed them.
var Ctx = apd.Context{
	Precision:   34,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Traps:       apd.DefaultTraps,
	Rounding:    apd.RoundHalfEven,
}

// Zero is a decimal zero; never modify it.
var Zero = apd.Decimal{}

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

// Fixed formats d with exactly places digits after the point, rounding half-even when d
// has more. It is how decimals leave the service: "1.10000" for a 5-digit symbol.
func Fixed(d apd.Decimal, places int32) string {
	var q apd.Decimal
	if _, err := Ctx.Quantize(&q, &d, -places); err != nil {
		return d.Text('f')
	}
	if q.IsZero() {
		q.Negative = false
	}
	return q.Text('f')
}

// String formats d in plain notation (no exponent) with its own precision.
func String(d apd.Decimal) string { return d.Text('f') }

// Cmp compares a and b: -1, 0 or +1.
func Cmp(a, b apd.Decimal) int { return a.Cmp(&b) }

// IsMultiple reports whether d is an integer multiple of step (step > 0).
func IsMultiple(d, step apd.Decimal) bool {
	if step.IsZero() {
		return true
	}
	var rem apd.Decimal
	if _, err := Ctx.Rem(&rem, &d, &step); err != nil {
		return false
	}
	return rem.IsZero()
}

// Add returns a+b.
func Add(a, b apd.Decimal) apd.Decimal {
	var r apd.Decimal
	_, _ = Ctx.Add(&r, &a, &b)
	return r
}

// Sub returns a-b.
func Sub(a, b apd.Decimal) apd.Decimal {
	var r apd.Decimal
	_, _ = Ctx.Sub(&r, &a, &b)
	return r
}

// Mul returns a*b.
func Mul(a, b apd.Decimal) apd.Decimal {
	var r apd.Decimal
	_, _ = Ctx.Mul(&r, &a, &b)
	return r
}

// Quo returns a/b rounded to the context precision; b must not be zero.
func Quo(a, b apd.Decimal) apd.Decimal {
	var r apd.Decimal
	_, _ = Ctx.Quo(&r, &a, &b)
	return r
}

// Round returns d rounded half-even to places decimal places.
func Round(d apd.Decimal, places int32) apd.Decimal {
	var r apd.Decimal
	_, _ = Ctx.Quantize(&r, &d, -places)
	return r
}

// Neg returns -d.
func Neg(d apd.Decimal) apd.Decimal {
	var r apd.Decimal
	r.Neg(&d)
	return r
}
