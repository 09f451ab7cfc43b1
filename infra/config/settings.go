package config

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// The kinds of setting: how the text of a flag or variable becomes a field's value.

// text keeps the value as it is.
func text(dst *string, flagName, def, usage string) setting {
	return setting{flagName, def, usage, func(_, raw string) error { *dst = raw; return nil }}
}

// list splits a comma-separated value (SplitList).
func list(dst *[]string, flagName, def, usage string) setting {
	return setting{flagName, def, usage, func(_, raw string) error { *dst = SplitList(raw); return nil }}
}

// boolean reads true or false.
func boolean(dst *bool, flagName, def, usage string) setting {
	return setting{flagName, def, usage, func(name, raw string) error {
		if raw != "true" && raw != "false" {
			return fmt.Errorf("%s %q: want true or false", name, raw)
		}
		*dst = raw == "true"
		return nil
	}}
}

// duration reads any duration (Validate says which must be positive).
func duration(dst *time.Duration, flagName, def, usage string) setting {
	return durationAtLeast(dst, flagName, def, usage, math.MinInt64, "a duration")
}

// positive reads a duration above zero.
func positive(dst *time.Duration, flagName, def, usage string) setting {
	return durationAtLeast(dst, flagName, def, usage, 1, "a positive duration")
}

// nonNegative reads a duration of zero (which turns its check off) or more.
func nonNegative(dst *time.Duration, flagName, def, usage string) setting {
	return durationAtLeast(dst, flagName, def, usage, 0, "a duration of 0 or more")
}

func durationAtLeast(dst *time.Duration, flagName, def, usage string, least time.Duration, want string) setting {
	return setting{flagName, def, usage, func(name, raw string) error {
		d, err := time.ParseDuration(raw)
		if err != nil || d < least {
			return fmt.Errorf("%s: want %s, got %q", name, want, raw)
		}
		*dst = d
		return nil
	}}
}

// count reads a whole number of at least 1.
func count(dst *int, flagName, def, usage string) setting {
	return setting{flagName, def, usage, func(name, raw string) error {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 {
			return fmt.Errorf("%s: want a positive integer, got %q", name, raw)
		}
		*dst = n
		return nil
	}}
}
