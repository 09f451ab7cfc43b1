package gateway

import (
	"context"
	"math"
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
//     offered at once (a burst that would lag again). It also falls, more gently, while the
//     process is short of CPU (MaxSchedDelay) and while the path holds a standing queue
//     (QueueTarget: even the fastest operation decided waits), long before a lag;
//   - while the process is short of CPU, new exposure is also let in at a bounded rate: nine
//     tenths of what was let in while it was (at least minRate), and a tenth less every
//     window it still is. The in-flight bound alone cannot do this: an order path that
//     decides in a few milliseconds lets thousands a second through even a bound of 60, and
//     every admitted order costs the cores far more (its record, its appends, its
//     projections, its stream frames) than an answer -1008. Measured on the benchmark
//     machine at 5,139 orders/s offered: without it, answers p99 1.4 to 2.5 s; with it, 0.59
//     s (docs/benchmarks.md). The rate bound rises by a twentieth every window in which the
//     process keeps up and most of it is used, and is lifted after rateLift without a
//     saturated window;
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
	// fastest is the shortest wait of an operation seen decided since adapt last ran (0:
	// none yet), and floor what adapt last read of it: the window's wait floor (0: nothing
	// decided in it). waitBase holds the lowest floors of this basePeriod and the previous
	// one (what the path takes with no queue: the trade server's own latency included), from
	// baseAt. standing counts the windows in a row whose floor was past the base by more than
	// QueueTarget.
	fastest  time.Duration
	floor    time.Duration
	waitBase [2]time.Duration
	baseAt   time.Time
	standing int
	lowered  string // why adapt last lowered the bound
	// rate is the bound on new exposure let in per second while the process is short of CPU
	// (0: none), tokens what it allows now (a token bucket of rateBurst), tokensAt when they
	// were last counted, admits the new exposure let in since adapt last ran, and hotAt when
	// the process was last found saturated.
	rate     float64
	tokens   float64
	tokensAt time.Time
	admits   int
	hotAt    time.Time
}

// rateLift is how long the rate bound outlives the last window in which the process was
// short of CPU.
const rateLift = basePeriod

// rateBurst is how much of a second's rate bound may be let in at once.
const rateBurst = 0.05

// minRate is the least the rate bound falls to, in operations a second, and the least rate
// let in that it bounds at all: fewer orders a second are not what a process lacks CPU for
// (at 200 a second the order path takes a fifth of a core on the bench machine).
const minRate = 200

// basePeriod is how long a lowest wait floor is kept as the path's base: long enough to hold
// a moment without a queue (the bound brings one about), short enough to follow a trade
// server that became slower.
const basePeriod = 10 * time.Second

// slowWindows is how many Adjust windows in a row the scheduling latency must be past
// MaxSchedDelay for the process to count as saturated, and the wait floor past QueueTarget
// for the path to hold a standing queue: one slow window (a collection, a burst) lowers
// nothing.
const slowWindows = 2

// AdmissionConfig bounds the work a gateway lets into the order path.
type AdmissionConfig struct {
	// MaxInFlight is how many queued operations may await their outcome before new
	// exposure is shed (default 4000); MinInFlight the least the adaptive bound falls to
	// while the path lags (default 60, at most MaxInFlight), Adjust how often it may move
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
	// QueueTarget: when, in two Adjust windows in a row that decided anything, even the
	// fastest operation seen decided awaited its outcome longer than this beyond the path's
	// base (the lowest such floor of the last 10 to 20 s: what it takes without a queue), the
	// path holds a standing queue, and the in-flight bound falls as while the process is
	// saturated. A burst (a collection, a checkpoint) makes some operations wait; only a
	// queue that never drains makes every one of them wait (CoDel's signal). It reacts long
	// before StaleLimit operations are MaxAge late (default 150ms).
	QueueTarget time.Duration
	// Forget drops an operation never seen decided after this long (an outcome the change
	// feed missed while it reconnected; default 10 s).
	Forget time.Duration
	// OnShed, when set, counts each shed request (metrics): its kind and the bound passed.
	OnShed func(kind, reason string)
	// OnLower, when set, counts each window in which the in-flight bound was lowered (or held
	// at MinInFlight), by cause: "lagging", "cpu" (MaxSchedDelay) or "queue" (QueueTarget).
	OnLower func(cause string)
}

func (c *AdmissionConfig) defaults() {
	c.MaxInFlight = check.PositiveOr(c.MaxInFlight, 4000)
	c.MaxAge = check.PositiveOr(c.MaxAge, 750*time.Millisecond)
	c.StaleLimit = check.PositiveOr(c.StaleLimit, 100)
	c.RiskFactor = check.PositiveOr(c.RiskFactor, 4)
	c.MinInFlight = min(check.PositiveOr(c.MinInFlight, 60), c.MaxInFlight)
	c.Adjust = check.PositiveOr(c.Adjust, c.MaxAge/5)
	c.Forget = check.PositiveOr(c.Forget, 10*time.Second)
	c.QueueTarget = check.PositiveOr(c.QueueTarget, 150*time.Millisecond)
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
	if factor == 1 {
		if !a.take(now) {
			return "rate"
		}
		a.admits++
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
// windows in a row) or the path holds a standing queue (QueueTarget, two windows in a row,
// at least MinInFlight in flight), to nine tenths of twice what is in flight (or of the
// bound); never below MinInFlight. While the path keeps up and four fifths of the bound are
// in flight, up by a tenth, never above MaxInFlight.
func (a *Admission) adapt(now time.Time) {
	if now.Sub(a.adjusted) < a.cfg.Adjust {
		return
	}
	window := now.Sub(a.adjusted)
	admits := a.admits
	a.adjusted, a.admits = now, 0
	n := len(a.inFlight) + a.admitting // what the bound counts
	saturated := false
	if a.cfg.MaxSchedDelay > 0 {
		a.sched = a.cfg.SchedDelay()
		if a.sched > a.cfg.MaxSchedDelay {
			a.hot++
		} else {
			a.hot = 0
		}
		saturated = a.hot >= slowWindows
	}
	a.adaptRate(now, saturated, window, admits)
	// A standing queue of fewer than MinInFlight operations lowers nothing: the bound would
	// fall to MinInFlight, and a slow operation or two would hold back the next burst. A
	// window in which nothing was decided changes nothing: after a stall, the fastest of the
	// operations it held is the one that came last.
	switch standing, judged := a.queueing(now); {
	case !judged:
	case standing && n >= a.cfg.MinInFlight:
		a.standing++
	default:
		a.standing = 0
	}
	if a.stale(now, &a.aged[0], a.cfg.StaleLimit) {
		a.lower(min(a.limit, n)*9/10, "lagging")
		return
	}
	// Gentler than a lag: twice what is in flight is left for bursts. Under an overload what
	// is in flight fills the bound, which then falls by a tenth a window; a passing queue at
	// a rate the path sustains lowers it to where it does not bind.
	if cause := gentleCause(saturated, a.standing >= slowWindows); cause != "" {
		a.lower(min(a.limit, 2*n)*9/10, cause)
		return
	}
	if n*5 >= a.limit*4 {
		a.limit = min(a.cfg.MaxInFlight, a.limit+max(a.limit/10, 1))
	}
}

// adaptRate moves the rate bound once a window (a.mu held): admits of new exposure were let
// in over window. While the process is saturated, to nine tenths of what was let in (or of
// the bound, when less: a window much longer than Adjust is idle time, not a rate), never
// below minRate, and not at all while less than minRate was let in; while it keeps up and
// four fifths of the bound were used, up by a twentieth; after rateLift without a saturated
// window, lifted.
func (a *Admission) adaptRate(now time.Time, saturated bool, window time.Duration, admits int) {
	switch {
	case saturated:
		a.hotAt = now
		measured := a.rate
		if window <= 2*a.cfg.Adjust {
			measured = float64(admits) / window.Seconds()
			if a.rate > 0 {
				measured = min(measured, a.rate)
			}
		}
		if a.rate == 0 && measured < minRate {
			return // a trickle is not what the process lacks CPU for
		}
		bounded := a.rate > 0
		a.rate = max(measured*9/10, minRate)
		if !bounded {
			a.tokens, a.tokensAt = a.rate*rateBurst, now // a burst's worth at once
		}
	case a.rate == 0:
	case now.Sub(a.hotAt) > rateLift:
		a.rate = 0
	case a.hot == 0 && float64(admits)*5 >= a.rate*window.Seconds()*4:
		a.rate *= 1.05
	}
}

// take spends a token of the rate bound, if there is one (a.mu held); without a rate bound
// there always is.
func (a *Admission) take(now time.Time) bool {
	if a.rate == 0 {
		return true
	}
	a.tokens = min(a.tokens+now.Sub(a.tokensAt).Seconds()*a.rate, a.rate*rateBurst) // at least minRate*rateBurst: 10
	a.tokensAt = now
	if a.tokens < 1 {
		return false
	}
	a.tokens--
	return true
}

// gentleCause names why the bound falls gently ("": it does not): the process short of CPU
// first, then a standing queue.
func gentleCause(saturated, standing bool) string {
	switch {
	case saturated:
		return "cpu"
	case standing:
		return "queue"
	}
	return ""
}

// lower sets the in-flight bound to limit (never below MinInFlight) for cause (a.mu held).
func (a *Admission) lower(limit int, cause string) {
	a.limit, a.lowered = max(a.cfg.MinInFlight, limit), cause
	if a.cfg.OnLower != nil {
		a.cfg.OnLower(cause)
	}
}

// queueing reads the window's wait floor (adapt's, a.mu held): judged is false when nothing
// was decided in the window (a stall, or nothing to do: the lag bound judges stalls), and
// standing whether the floor was past the path's base by more than QueueTarget. The base is
// the lowest floor of this basePeriod and the previous one.
func (a *Admission) queueing(now time.Time) (standing, judged bool) {
	a.floor, a.fastest = a.fastest, 0
	if a.floor == 0 {
		return false, false
	}
	if now.Sub(a.baseAt) > basePeriod {
		a.waitBase[1], a.waitBase[0], a.baseAt = a.waitBase[0], 0, now
	}
	if a.waitBase[0] == 0 || a.floor < a.waitBase[0] {
		a.waitBase[0] = a.floor
	}
	return a.floor > a.pathBase()+a.cfg.QueueTarget, true
}

// pathBase is the lowest wait floor of this basePeriod and the previous one (0: none seen).
func (a *Admission) pathBase() time.Duration {
	if a.waitBase[0] == 0 || (a.waitBase[1] != 0 && a.waitBase[1] < a.waitBase[0]) {
		return a.waitBase[1]
	}
	return a.waitBase[0]
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
	if seq, ok := a.inFlight[c.OperationID]; ok { // another gateway's reads no clock
		if w := max(a.now().Sub(a.queue[seq-a.base].at), 1); a.fastest == 0 || w < a.fastest {
			a.fastest = w
		}
		a.retire(c.OperationID)
	}
	a.mu.Unlock()
}

// AdmissionState is what readiness shows of admission control.
type AdmissionState struct {
	InFlight int `json:"inFlight"`
	// Admitting counts the requests admitted whose handlers have not returned (counted
	// against the bound with InFlight).
	Admitting int `json:"admitting"`
	// Bound is the in-flight bound now (it adapts to the path's lag), and Lowered why it was
	// last lowered ("lagging", "cpu" or "queue"; empty: never).
	Bound   int    `json:"bound"`
	Lowered string `json:"lowered,omitempty"`
	// Shedding: a request was shed within the last 5 seconds (Reason says which bound).
	Shedding bool      `json:"shedding"`
	Reason   string    `json:"reason,omitempty"`
	LastShed time.Time `json:"lastShed,omitzero"`
	// SchedDelayP99Ms is the process's scheduling latency p99 as the bound last read it
	// (MaxSchedDelay; 0 when not watched).
	SchedDelayP99Ms float64 `json:"schedDelayP99Ms"`
	// Rate is the bound on new exposure let in per second while the process is short of CPU
	// (0: none now).
	Rate float64 `json:"rate"`
	// WaitFloorMs is the shortest wait of an operation decided in the last window (0: none
	// was), and WaitBaseMs the path's base (QueueTarget: a floor past the base by more, two
	// windows in a row, is a standing queue, and the bound falls).
	WaitFloorMs float64 `json:"waitFloorMs"`
	WaitBaseMs  float64 `json:"waitBaseMs"`
}

// State reports the admission control's state now.
func (a *Admission) State() AdmissionState {
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	s := AdmissionState{InFlight: len(a.inFlight), Admitting: a.admitting, Bound: a.limit, Lowered: a.lowered, LastShed: a.shedAt,
		SchedDelayP99Ms: ms(a.sched), Rate: math.Round(a.rate), WaitFloorMs: ms(a.floor), WaitBaseMs: ms(a.pathBase())}
	if !a.shedAt.IsZero() && now.Sub(a.shedAt) < 5*time.Second {
		s.Shedding, s.Reason = true, a.reason
	}
	return s
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
