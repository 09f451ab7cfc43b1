package trading

import (
	"fmt"
	"slices"
	"sort"
)

// Coverage is what one place that dispatches on event types or operation kinds declares: what
// it handles (read from its own dispatch table wherever it has one, so the declaration cannot
// drift from the code) and what it ignores on purpose. A test walks every event type of the
// catalogue and every kind through every place and fails naming the place where one is in
// neither list: a new event type or kind cannot be added without each place deciding.
type Coverage struct {
	Place          string
	Events         []string
	IgnoredEvents  []string
	Kinds          []Kind
	IgnoredKinds   []Kind
	EventsDeclared bool // the place dispatches on event types
	KindsDeclared  bool // the place dispatches on kinds
}

// Missing lists what of types and kinds c neither handles nor ignores, and what it lists in
// both (a place cannot handle and ignore the same thing).
func (c Coverage) Missing(types []string, kinds []Kind) []string {
	var out []string
	if c.EventsDeclared {
		out = append(out, missing(c.Place, "event type", types, c.Events, c.IgnoredEvents)...)
	}
	if c.KindsDeclared {
		out = append(out, missing(c.Place, "kind", kinds, c.Kinds, c.IgnoredKinds)...)
	}
	sort.Strings(out)
	return out
}

// missing checks one list of a place's declaration: each of all must be in exactly one of
// handled and ignored.
func missing[T comparable](place, what string, all, handled, ignored []T) []string {
	var out []string
	for _, x := range all {
		h, i := slices.Contains(handled, x), slices.Contains(ignored, x)
		switch {
		case !h && !i:
			out = append(out, fmt.Sprintf("%s: %s %v neither handled nor ignored", place, what, x))
		case h && i:
			out = append(out, fmt.Sprintf("%s: %s %v both handled and ignored", place, what, x))
		}
	}
	return out
}

// DeriveCoverage is the status derivation's: it handles every kind whose table entry says
// all that the derivation and the answers ask of a kind.
func DeriveCoverage() Coverage {
	c := Coverage{Place: "status derivation (events/trading)", KindsDeclared: true}
	for k, s := range kinds {
		if s.command != "" && s.atMarket != nil && s.queued != nil && s.done != nil && s.request != nil && s.filled != "" {
			c.Kinds = append(c.Kinds, k)
		}
	}
	return c
}
