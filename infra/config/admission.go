package config

import "time"

// Admission holds the bounds of the gateway's admission control: past them a new operation
// is answered -1008 at once instead of waiting inside the service.
type Admission struct {
	// MaxInFlight is how many operations a gateway queued may await their outcome before new
	// orders are shed; the bound adapts to the path's lag, never below MinInFlight.
	MaxInFlight int
	MinInFlight int
	// MaxAge and StaleLimit: StaleLimit operations awaiting their outcome longer than MaxAge
	// mean the path behind the gateway lags, and new orders are shed.
	MaxAge     time.Duration
	StaleLimit int
	// QueueTarget: a wait floor past the path's base by more than this, two windows in a row,
	// is a standing queue, and the in-flight bound falls (gateway.AdmissionConfig).
	QueueTarget time.Duration
	// RiskFactor multiplies the bounds for cancels, closes and sweeps.
	RiskFactor int
	// MaxSchedDelay: past this p99 of the time the gateway's goroutines wait for a CPU, the
	// process is saturated and the in-flight bound falls (gateway.Admission; 0: off).
	MaxSchedDelay time.Duration
}
