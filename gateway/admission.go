package gateway

import (
	"context"
	"strconv"
	"sync"
	"time"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/check"
	"tradesvc/query"
)

// Admission sheds new operations while the order path cannot take more, answering -1008
// ("overloaded; did not execute") at once instead of letting requests queue inside the
// service. It counts the operations this gateway queued whose executor outcome it has not
// seen yet (the change feed's OPERATION states say when one is decided):
//
//   - too many in flight (MaxInFlight), or too many waiting longer than MaxAge (StaleLimit:
//     the path behind the gateway is lagging), sheds operations that add exposure (placements
//     and modifications);
//   - risk-reducing operations (cancels, closes, sweeps) are admitted up to bounds RiskFactor
//     times as large, so that a client can always flatten.
//
// A retry of an operation already recorded is never shed (it is answered from its record);
// a shed request records and appends nothing and does not count against ORDERS.
type Admission struct {
	cfg AdmissionConfig
	now func() time.Time

	mu       sync.Mutex
	inFlight map[string]time.Time // operation id → when this gateway queued it
	queue    []queued             // the same, oldest first (decided ones are dropped lazily)
	shedAt   time.Time            // the last time a request was shed
	reason   string               // why the last one was
}

// AdmissionConfig bounds the work a gateway lets into the order path.
type AdmissionConfig struct {
	// MaxInFlight is how many queued operations may await their outcome before new
	// exposure is shed (default 4000).
	MaxInFlight int
	// MaxAge and StaleLimit: when StaleLimit operations have awaited their outcome longer
	// than MaxAge, the path is lagging and new exposure is shed (defaults 750ms and 100).
	MaxAge     time.Duration
	StaleLimit int
	// RiskFactor multiplies every bound for risk-reducing operations (default 4).
	RiskFactor int
	// Forget drops an operation never seen decided after this long (an outcome the change
	// feed missed while it reconnected; default 10 s).
	Forget time.Duration
	// OnShed, when set, counts each shed request (metrics): its kind and the bound passed.
	OnShed func(kind, reason string)
}

func (c *AdmissionConfig) defaults() {
	c.MaxInFlight = check.PositiveOr(c.MaxInFlight, 4000)
	c.MaxAge = check.PositiveOr(c.MaxAge, 750*time.Millisecond)
	c.StaleLimit = check.PositiveOr(c.StaleLimit, 100)
	c.RiskFactor = check.PositiveOr(c.RiskFactor, 4)
	c.Forget = check.PositiveOr(c.Forget, 10*time.Second)
}

// NewAdmission builds the admission control; now is the gateway's clock.
func NewAdmission(cfg AdmissionConfig, now func() time.Time) *Admission {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	return &Admission{cfg: cfg, now: now, inFlight: map[string]time.Time{}}
}

// errOverloaded is -1008.
var errOverloaded = events.Reject(events.CodeOverloaded,
	"Overloaded; did not execute. Nothing was recorded: retry later with the same or a new newClientOrderId.")

// Admit returns why an operation of kind should be shed now ("": admit it). It counts
// nothing: Shed does, once the caller has checked that the request is not a retry.
func (a *Admission) Admit(kind trading.Kind) (reason string) {
	factor := 1
	if kind.RiskReducing() {
		factor = a.cfg.RiskFactor
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trim(now)
	if len(a.inFlight) >= a.cfg.MaxInFlight*factor {
		return "in-flight"
	}
	if a.stale(now, time.Duration(factor)*a.cfg.MaxAge, a.cfg.StaleLimit*factor) {
		return "lagging"
	}
	return ""
}

// Shed counts a request of kind shed for reason and returns its answer, -1008.
func (a *Admission) Shed(kind trading.Kind, reason string) error {
	now := a.now()
	a.mu.Lock()
	a.shedAt, a.reason = now, reason
	a.mu.Unlock()
	if a.cfg.OnShed != nil {
		a.cfg.OnShed(string(kind), reason)
	}
	return errOverloaded
}

// admit is admission control for one operation of kind whose parameters are p: -1008 when
// it must be shed, unless its newClientOrderId is recorded (a retry, answered from its
// record as always).
func (s *Server) admit(ctx context.Context, r *Request, p paramGetter, kind trading.Kind) error {
	reason := s.admission.Admit(kind)
	if reason == "" {
		return nil
	}
	if id, ok := optional(p, "newClientOrderId"); ok && id != "" && r.Key != nil {
		apiKeyID, _ := strconv.ParseInt(r.Key.ID, 10, 64)
		recorded, err := s.app.Commands.Recorded(ctx, apiKeyID, id)
		if err != nil {
			return err
		}
		if recorded {
			return nil
		}
	}
	return s.admission.Shed(kind, reason)
}

// queued is one operation in the order this gateway queued them.
type queued struct {
	id string
	at time.Time
}

// trim drops from the front of the queue the operations decided, and those waiting longer
// than Forget (a.mu held).
func (a *Admission) trim(now time.Time) {
	i := 0
	for ; i < len(a.queue); i++ {
		q := a.queue[i]
		at, ok := a.inFlight[q.id]
		if ok && at.Equal(q.at) && now.Sub(q.at) <= a.cfg.Forget {
			break
		}
		if ok && at.Equal(q.at) {
			delete(a.inFlight, q.id)
		}
	}
	a.queue = a.queue[i:]
}

// stale reports whether at least limit operations have awaited their outcome longer than
// age: it reads the queue from its oldest end and stops at the first young one (a.mu held).
func (a *Admission) stale(now time.Time, age time.Duration, limit int) bool {
	n := 0
	for _, q := range a.queue {
		if now.Sub(q.at) <= age {
			return false
		}
		if at, ok := a.inFlight[q.id]; ok && at.Equal(q.at) {
			if n++; n >= limit {
				return true
			}
		}
	}
	return false
}

// Queued records an operation this gateway queued (a fresh answer: nothing decided yet).
func (a *Admission) Queued(operationID string) {
	if operationID == "" {
		return
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight[operationID] = now
	a.queue = append(a.queue, queued{operationID, now})
}

// Observe is the change feed's observer: an OPERATION state that carries its executor's
// outcome ends the operation's wait.
func (a *Admission) Observe(c query.Change) {
	if c.Kind != query.ChangeOperation || c.Operation == nil || !c.Operation.Decided {
		return
	}
	a.mu.Lock()
	delete(a.inFlight, c.OperationID)
	a.mu.Unlock()
}

// AdmissionState is what readiness shows of admission control.
type AdmissionState struct {
	InFlight int `json:"inFlight"`
	// Shedding: a request was shed within the last 5 seconds (Reason says which bound).
	Shedding bool      `json:"shedding"`
	Reason   string    `json:"reason,omitempty"`
	LastShed time.Time `json:"lastShed,omitzero"`
}

// State reports the admission control's state now.
func (a *Admission) State() AdmissionState {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	s := AdmissionState{InFlight: len(a.inFlight), LastShed: a.shedAt}
	if !a.shedAt.IsZero() && now.Sub(a.shedAt) < 5*time.Second {
		s.Shedding, s.Reason = true, a.reason
	}
	return s
}
