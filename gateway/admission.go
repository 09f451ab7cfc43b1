package gateway

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

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
//   - too many in flight, or too many waiting longer than MaxAge (StaleLimit: the path behind
//     the gateway is lagging), sheds operations that add exposure (placements and
//     modifications);
//   - "too many in flight" is a bound that adapts (between MinInFlight and MaxInFlight):
//     while the path lags it falls below what is in flight, by a tenth every Adjust, and
//     while the path keeps up and the bound is nearly reached it rises by a tenth. Past a lag,
//     the gateway then lets in about what the path took before it, instead of everything
//     offered at once (a burst that would lag again);
//   - risk-reducing operations (cancels, closes, sweeps) are admitted up to bounds RiskFactor
//     times as large (of MaxInFlight, not of the adaptive bound), so that a client can always
//     flatten.
//
// A retry of an operation already recorded is never shed (it is answered from its record);
// a shed request records and appends nothing and does not count against ORDERS.
type Admission struct {
	cfg AdmissionConfig
	now func() time.Time

	mu sync.Mutex
	// inFlight maps the id of each operation in flight to its place in queue (its seq: the
	// queue's entry seq-base).
	inFlight map[string]uint64
	// queue holds the operations this gateway queued, oldest first; decided ones are marked
	// done, and dropped from the front (trim).
	queue []queued
	base  uint64 // the seq of queue[0]
	// aged counts the operations in flight older than MaxAge (aged[0]) and than RiskFactor
	// times MaxAge (aged[1]): what the lag bound reads on every request.
	aged [2]ageCursor
	// admitting counts the requests admitted whose handler has not returned yet (Release):
	// under overload hundreds are between Admit and Queued at once (validated, recorded,
	// appended), and a bound that did not count them would let all of them in.
	admitting int
	shedAt    time.Time     // the last time a request was shed
	reason    string        // why the last one was
	limit     int           // the adaptive in-flight bound (adapt)
	adjusted  time.Time     // when it was last considered
	sched     time.Duration // the scheduling latency p99 adapt read last
	hot       int           // windows in a row whose scheduling latency was past MaxSchedDelay
}

// saturatedWindows is how many Adjust windows in a row the scheduling latency must be past
// MaxSchedDelay for the process to count as saturated: one slow window (a collection, a
// burst) lowers nothing.
const saturatedWindows = 2

// AdmissionConfig bounds the work a gateway lets into the order path.
type AdmissionConfig struct {
	// MaxInFlight is how many queued operations may await their outcome before new
	// exposure is shed (default 4000); MinInFlight the least the adaptive bound falls to
	// while the path lags (default 300, at most MaxInFlight), Adjust how often it may move
	// (default MaxAge / 5).
	MaxInFlight int
	MinInFlight int
	Adjust      time.Duration
	// MaxAge and StaleLimit: when StaleLimit operations have awaited their outcome longer
	// than MaxAge, the path is lagging and new exposure is shed (defaults 750ms and 100).
	MaxAge     time.Duration
	StaleLimit int
	// RiskFactor multiplies every bound for risk-reducing operations (default 4).
	RiskFactor int
	// MaxSchedDelay: when this process's goroutines waited longer than this for a CPU (the
	// 99th percentile of SchedDelay over the last Adjust), the gateway is saturated: every
	// answer it gives, -1008 included, queues behind the work it let in. The in-flight bound
	// then falls (adapt), so that less is let in and shedding stays quick (0: not watched).
	// SchedDelay reads it (default: the runtime's, SchedLatency.P99).
	MaxSchedDelay time.Duration
	SchedDelay    func() time.Duration
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
	c.MinInFlight = min(check.PositiveOr(c.MinInFlight, 300), c.MaxInFlight)
	c.Adjust = check.PositiveOr(c.Adjust, c.MaxAge/5)
	c.Forget = check.PositiveOr(c.Forget, 10*time.Second)
	if c.MaxSchedDelay > 0 && c.SchedDelay == nil {
		c.SchedDelay = NewSchedLatency().P99
	}
}

// NewAdmission builds the admission control; now is the gateway's clock.
func NewAdmission(cfg AdmissionConfig, now func() time.Time) *Admission {
	cfg.defaults()
	if now == nil {
		now = time.Now
	}
	a := &Admission{cfg: cfg, now: now, inFlight: map[string]uint64{}, limit: cfg.MaxInFlight}
	a.aged[0].age, a.aged[1].age = cfg.MaxAge, time.Duration(cfg.RiskFactor)*cfg.MaxAge
	return a
}

// errOverloaded is -1008.
var errOverloaded = events.Reject(events.CodeOverloaded,
	"Overloaded; did not execute. Nothing was recorded: retry later with the same or a new newClientOrderId.")

// Admit returns why an operation of kind should be shed now ("": admit it, and count it
// against the bounds until Release). A shed one counts nothing: Shed does, once the caller
// has checked that the request is not a retry.
func (a *Admission) Admit(kind trading.Kind) (reason string) {
	factor, aged := 1, &a.aged[0]
	if kind.RiskReducing() {
		factor, aged = a.cfg.RiskFactor, &a.aged[1]
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.trim(now)
	a.adapt(now)
	if a.stale(now, aged, a.cfg.StaleLimit*factor) {
		return "lagging"
	}
	bound := a.limit // new exposure: the adaptive bound
	if factor > 1 {
		bound = a.cfg.MaxInFlight * factor // flattening never waits for the bound to rise again
	}
	if len(a.inFlight)+a.admitting >= bound {
		return "in-flight"
	}
	a.admitting++
	return ""
}

// Release ends the count of n requests Admit admitted: their handlers returned, or queued
// what is now counted in flight (Queued) until decided.
func (a *Admission) Release(n int) {
	a.mu.Lock()
	a.admitting = max(a.admitting-n, 0)
	a.mu.Unlock()
}

// admittedKey holds, in an admitted request's locals, the release of its admission (once).
const admittedKey = "tradesvc.admitted"

// holdAdmission keeps the admission of the request c until its handler returns or its
// operation is queued, whichever comes first (releaseAdmission): a RESULT awaiting its answer
// is counted once, as the operation in flight, not twice.
func (s *Server) holdAdmission(c *fiber.Ctx) (release func()) {
	var once sync.Once
	release = func() { once.Do(func() { s.admission.Release(1) }) }
	c.Locals(admittedKey, release)
	return release
}

// releaseAdmission ends the admission count of the request c, if it holds one.
func releaseAdmission(c *fiber.Ctx) {
	if release, ok := c.Locals(admittedKey).(func()); ok {
		release()
	}
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
// record as always). admitted reports that it counts against the bounds: the caller
// releases it (Admission.Release) once its handler has returned.
func (s *Server) admit(ctx context.Context, r *Request, p paramGetter, kind trading.Kind) (admitted bool, err error) {
	reason := s.admission.Admit(kind)
	if reason == "" {
		return true, nil
	}
	if id, ok := optional(p, "newClientOrderId"); ok && id != "" && r.Key != nil {
		apiKeyID, _ := strconv.ParseInt(r.Key.ID, 10, 64)
		recorded, err := s.app.Commands.Recorded(ctx, apiKeyID, id)
		if err != nil {
			return false, err
		}
		if recorded {
			return false, nil
		}
	}
	return false, s.admission.Shed(kind, reason)
}

// queued is one operation in the order this gateway queued them.
type queued struct {
	id   string
	at   time.Time
	done bool // decided, forgotten, or queued again since (a later entry counts)
}

// ageCursor counts the operations in flight that have waited longer than age: the queue's
// entries before end are that old, and live of them are not done. Each entry passes the
// cursor once, so reading the count costs nothing per request however long the queue.
type ageCursor struct {
	age  time.Duration
	end  int
	live int
}

// advance moves the cursor past the entries that have now waited longer than its age.
func (c *ageCursor) advance(q []queued, now time.Time) {
	for c.end < len(q) && now.Sub(q[c.end].at) > c.age {
		if !q[c.end].done {
			c.live++
		}
		c.end++
	}
}

// retire takes the operation id off what is in flight, if it is there, and its queue entry
// off the counts of the cursors that have passed it (a.mu held).
func (a *Admission) retire(id string) {
	seq, ok := a.inFlight[id]
	if !ok {
		return
	}
	delete(a.inFlight, id)
	i := int(seq - a.base)
	a.queue[i].done = true
	for c := range a.aged {
		if i < a.aged[c].end {
			a.aged[c].live--
		}
	}
}

// trim drops from the front of the queue the operations decided, and those waiting longer
// than Forget (a.mu held).
func (a *Admission) trim(now time.Time) {
	i := 0
	for ; i < len(a.queue); i++ {
		q := &a.queue[i]
		if !q.done && now.Sub(q.at) <= a.cfg.Forget {
			break
		}
		if !q.done {
			a.retire(q.id)
		}
	}
	if i == 0 {
		return
	}
	clear(a.queue[:i]) // their ids are not held on to
	a.queue = a.queue[i:]
	a.base += uint64(i)
	for c := range a.aged {
		a.aged[c].end = max(a.aged[c].end-i, 0)
	}
}

// adapt moves the in-flight bound, at most every Adjust (a.mu held); "in flight" is what the
// bound counts (queued and admitting). While the path lags, to nine tenths of what is in
// flight (or of the bound, when less is); while the process is saturated (MaxSchedDelay, two
// windows in a row), to nine tenths of twice what is in flight (or of the bound); never below
// MinInFlight. While the path keeps up and four fifths of the bound are in flight, up by a
// tenth, never above MaxInFlight.
func (a *Admission) adapt(now time.Time) {
	if now.Sub(a.adjusted) < a.cfg.Adjust {
		return
	}
	a.adjusted = now
	n := len(a.inFlight) + a.admitting // what the bound counts
	saturated := false
	if a.cfg.MaxSchedDelay > 0 {
		a.sched = a.cfg.SchedDelay()
		if a.sched > a.cfg.MaxSchedDelay {
			a.hot++
		} else {
			a.hot = 0
		}
		saturated = a.hot >= saturatedWindows
	}
	if a.stale(now, &a.aged[0], a.cfg.StaleLimit) {
		a.limit = max(a.cfg.MinInFlight, min(a.limit, n)*9/10)
		return
	}
	if saturated { // gentler than a lag: twice what is in flight is left for bursts
		a.limit = max(a.cfg.MinInFlight, min(a.limit, 2*n)*9/10)
		return
	}
	if n*5 >= a.limit*4 {
		a.limit = min(a.cfg.MaxInFlight, a.limit+max(a.limit/10, 1))
	}
}

// stale reports whether at least limit operations have awaited their outcome longer than
// the age of the cursor aged (a.mu held).
func (a *Admission) stale(now time.Time, aged *ageCursor, limit int) bool {
	aged.advance(a.queue, now)
	return aged.live >= limit
}

// Queued records an operation this gateway queued (a fresh answer: nothing decided yet).
func (a *Admission) Queued(operationID string) {
	if operationID == "" {
		return
	}
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.retire(operationID) // queued again (a retry): the later entry counts
	a.inFlight[operationID] = a.base + uint64(len(a.queue))
	a.queue = append(a.queue, queued{id: operationID, at: now})
}

// Observe is the change feed's observer: an OPERATION state that carries its executor's
// outcome ends the operation's wait.
func (a *Admission) Observe(c query.Change) {
	if c.Kind != query.ChangeOperation || c.Operation == nil || !c.Operation.Decided {
		return
	}
	a.mu.Lock()
	a.retire(c.OperationID)
	a.mu.Unlock()
}

// AdmissionState is what readiness shows of admission control.
type AdmissionState struct {
	InFlight int `json:"inFlight"`
	// Admitting counts the requests admitted whose handlers have not returned (counted
	// against the bound with InFlight).
	Admitting int `json:"admitting"`
	// Bound is the in-flight bound now (it adapts to the path's lag).
	Bound int `json:"bound"`
	// Shedding: a request was shed within the last 5 seconds (Reason says which bound).
	Shedding bool      `json:"shedding"`
	Reason   string    `json:"reason,omitempty"`
	LastShed time.Time `json:"lastShed,omitzero"`
	// SchedDelayP99Ms is the process's scheduling latency p99 as the bound last read it
	// (MaxSchedDelay; 0 when not watched).
	SchedDelayP99Ms float64 `json:"schedDelayP99Ms"`
}

// State reports the admission control's state now.
func (a *Admission) State() AdmissionState {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	s := AdmissionState{InFlight: len(a.inFlight), Admitting: a.admitting, Bound: a.limit, LastShed: a.shedAt,
		SchedDelayP99Ms: float64(a.sched.Microseconds()) / 1000}
	if !a.shedAt.IsZero() && now.Sub(a.shedAt) < 5*time.Second {
		s.Shedding, s.Reason = true, a.reason
	}
	return s
}
