// Package check collects what is wrong with a configuration or with the dependencies a
// component was given, so that Validate reports every problem at once (joined) rather than
// the first.
package check

import "errors"

// Problems is what was found wrong so far; the zero value holds none.
type Problems struct{ errs []error }

// If records the problem msg when bad holds.
func (p *Problems) If(bad bool, msg string) {
	if bad {
		p.errs = append(p.errs, errors.New(msg))
	}
}

// Add records err unless it is nil.
func (p *Problems) Add(err error) {
	if err != nil {
		p.errs = append(p.errs, err)
	}
}

// Err is every problem recorded, joined; nil when there is none.
func (p *Problems) Err() error { return errors.Join(p.errs...) }

// PositiveOr is v when it is positive, else def: a setting that must be positive takes its
// default when it is left zero (or set negative).
func PositiveOr[T ~int | ~int32 | ~int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}
