package config

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Admission holds the bounds of the gateway's admission control: past them a new operation
// is answered -1008 at once instead of waiting inside the service.
type Admission struct {
	// MaxInFlight is how many operations a gateway queued may await their outcome before new
	// orders are shed.
	MaxInFlight int
	// MaxAge and StaleLimit: StaleLimit operations awaiting their outcome longer than MaxAge
	// mean the path behind the gateway lags, and new orders are shed.
	MaxAge     time.Duration
	StaleLimit int
	// RiskFactor multiplies the bounds for cancels, closes and sweeps.
	RiskFactor int
}

func admissionSettings(raw map[string]*string) []setting {
	s := func(flagName, def, usage string) setting { return newSetting(raw, flagName, def, usage) }
	return []setting{
		s("admit-max-in-flight", "4000", "admission: operations awaiting their outcome past which new orders get -1008"),
		s("admit-max-age", "750ms", "admission: an operation awaiting its outcome longer is late"),
		s("admit-stale-limit", "100", "admission: late operations past which new orders get -1008"),
		s("admit-risk-factor", "4", "admission: how many times larger the bounds are for cancels, closes and sweeps"),
	}
}

func loadAdmission(get func(string) string) (Admission, error) {
	var a Admission
	var errs []error
	num := func(name string, dst *int) {
		n, err := strconv.Atoi(get(name))
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("%s %q: want a whole number of at least 1", name, get(name)))
		}
		*dst = n
	}
	num("admit-max-in-flight", &a.MaxInFlight)
	num("admit-stale-limit", &a.StaleLimit)
	num("admit-risk-factor", &a.RiskFactor)
	d, err := time.ParseDuration(get("admit-max-age"))
	if err != nil || d <= 0 {
		errs = append(errs, fmt.Errorf("admit-max-age %q: want a positive duration", get("admit-max-age")))
	}
	a.MaxAge = d
	return a, errors.Join(errs...)
}
