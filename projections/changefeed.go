package projections

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	json "github.com/goccy/go-json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"tradesvc/events"
	"tradesvc/infra/check"
	"tradesvc/infra/wait"
	"tradesvc/query"
)

// ErrLagged ends a subscription whose buffer was full when a change was due.
var ErrLagged = query.ErrLagged

// ErrIntakeLagged ends a subscription whose logins' intake lagged past MaxLag (wraps
// ErrLagged).
var ErrIntakeLagged = query.ErrIntakeLagged

// ErrChangesLost ends a subscription whose logins' rows were pruned unread (wraps ErrLagged).
var ErrChangesLost = query.ErrChangesLost

// ErrStoreRestarted ends the subscriptions that may have seen rows a crash of Postgres took
// back (wraps ErrChangesLost).
var ErrStoreRestarted = query.ErrStoreRestarted

// ErrFeedStopped ends the subscriptions of a change feed whose Run returned.
var ErrFeedStopped = errors.New("projections: change feed stopped")

// ChangeFeedConfig configures a change-feed reader.
type ChangeFeedConfig struct {
	// ConnString is the Postgres connection string; the feed keeps one dedicated connection
	// for LISTEN.
	ConnString string
	// Logger receives reconnections (default slog.Default()).
	Logger *slog.Logger
	// Poll is how often the feed reads new rows without a notification (default 500ms), so
	// a lost notification only delays delivery.
	Poll time.Duration
	// Recent is how long the latest state of each operation is kept for a waiter that starts
	// watching after it committed (default 30s).
	Recent time.Duration
	// OnReference, when set, is called when the reference projection (of any process)
	// committed a change (ReferenceChannel): caches of reference data drop what they hold.
	OnReference func(RefScope)
	// MaxLag bounds how long the intake of a subscription's logins may lag (the relay or the
	// trading projection behind, as they report in rm.intake; this feed down) before the
	// subscription is ended with ErrIntakeLagged (default 5s; negative: never).
	MaxLag time.Duration
}

// Validate reports every problem at once.
func (c ChangeFeedConfig) Validate() error {
	var p check.Problems
	p.If(c.ConnString == "", "projections: change feed needs a connection string")
	p.If(c.Poll < 0 || c.Recent < 0, "projections: change feed poll interval and recent window must not be negative")
	return p.Err()
}

// changeFeedPage is how many rows one catch-up query reads.
const changeFeedPage = 1000

// feedAppName names the feed's connection in pg_stat_activity (unless the connection string
// names it).
const feedAppName = "tradesvc-changefeed"

// ChangeFeed tails rm.changes in a gateway. Rows reach it three ways, all in each
// partition's order: handed over by the trading projection of this process once committed
// (Publish), in the payload of a NOTIFY from another process's, or read by query when a
// notification said more than it carried, when a partition's numbers have a gap, and every
// Poll. It wakes operation waiters with the operation's state itself (no read per wake) and
// feeds user-stream subscriptions. It starts at the newest row of each partition when Run
// first connects: history is not replayed. With every poll it reads how the service's intake
// stands (rm.intake) and ends the subscriptions of logins whose intake lags past MaxLag, as
// it does when it has itself been down that long, or when rows it never read were pruned.
type ChangeFeed struct {
	cfg ChangeFeedConfig

	ready     chan struct{}
	readyOnce sync.Once
	behind    chan int32 // partitions with a gap to read by query (buffered)

	mu         sync.Mutex
	last       map[int32]int64 // per partition, the last row dispatched
	stopped    bool
	watchers   map[string]map[chan query.OperationState]struct{}
	recent     recentStates
	subs       map[*Subscription]struct{}
	observers  []func(query.Change)
	started    time.Time     // when Postgres started, as of the last connection (connected)
	live       bool          // a session reads the feed
	lastErr    error         // why the last session ended
	stateSince time.Time     // when live or lastErr last changed (or the feed was built)
	intake     intakeLag     // as of the last poll
	pid        atomic.Uint32 // the backend of the session's connection; 0 between sessions
}

// PID is the Postgres backend process of the feed's connection, 0 while it has none: the
// trading projection of this process need not NOTIFY it (notifyGate).
func (f *ChangeFeed) PID() uint32 { return f.pid.Load() }

// Status reports whether the feed is reading rm.changes now and, when it is not, why its
// last session ended and since when (readiness).
func (f *ChangeFeed) Status() (live bool, err error, since time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live, f.lastErr, f.stateSince
}

func (f *ChangeFeed) setState(live bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live != live || (err == nil) != (f.lastErr == nil) {
		f.stateSince = time.Now()
	}
	f.live, f.lastErr = live, err
}

// NewChangeFeed builds a feed; call Run to start it.
func NewChangeFeed(cfg ChangeFeedConfig) (*ChangeFeed, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	cfg.Poll = cmp.Or(cfg.Poll, 500*time.Millisecond)
	cfg.Recent = cmp.Or(cfg.Recent, 30*time.Second)
	cfg.MaxLag = cmp.Or(cfg.MaxLag, 5*time.Second)
	return &ChangeFeed{cfg: cfg, ready: make(chan struct{}), behind: make(chan int32, 64), last: map[int32]int64{},
		watchers: map[string]map[chan query.OperationState]struct{}{}, recent: newRecentStates(cfg.Recent),
		subs: map[*Subscription]struct{}{}, stateSince: time.Now()}, nil
}

// Run reads the feed until ctx ends, reconnecting with backoff; it returns nil then. Its
// subscriptions end with ErrFeedStopped.
func (f *ChangeFeed) Run(ctx context.Context) error {
	defer f.stop()
	if f.cfg.MaxLag > 0 {
		defer wait.Beside(ctx, f.watchLag)()
	}
	failures := 0
	for ctx.Err() == nil {
		healthy, err := f.session(ctx)
		if ctx.Err() != nil {
			break
		}
		f.setState(false, err)
		if healthy {
			failures = 0
		}
		failures++
		wait := min(time.Duration(failures)*200*time.Millisecond, 5*time.Second)
		f.cfg.Logger.Warn("change feed: reconnecting", "err", err, "in", wait)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return nil
}

// session is one connection's life: position (first time only), LISTEN, then dispatch what
// each notification carries, and catch up by query on a gap, on a poll tick, and at once
// after connecting (nothing committed while it was away is missed). healthy says it got as
// far as reading the feed.
func (f *ChangeFeed) session(ctx context.Context) (healthy bool, err error) {
	cc, err := pgx.ParseConfig(f.cfg.ConnString)
	if err != nil {
		return false, fmt.Errorf("connection string: %w", err)
	}
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = feedAppName
	}
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	f.pid.Store(conn.PgConn().PID())
	defer f.pid.Store(0)
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if cerr := conn.Close(closeCtx); cerr != nil {
			f.cfg.Logger.Debug("change feed: close connection", "err", cerr)
		}
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+ChangesChannel+"; LISTEN "+ReferenceChannel); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	if f.cfg.OnReference != nil {
		f.cfg.OnReference(RefAll) // what changed while disconnected was not heard
	}
	if err := f.connected(ctx, conn); err != nil {
		return false, err
	}
	poll := time.Now()
	for {
		if err := f.catchUp(ctx, conn, nil); err != nil {
			return healthy, err
		}
		if err := f.readIntake(ctx, conn); err != nil {
			return healthy, err
		}
		if !healthy {
			f.setState(true, nil)
		}
		healthy = true
		for time.Since(poll) < f.cfg.Poll {
			if err := f.listen(ctx, conn, poll.Add(f.cfg.Poll)); err != nil {
				return healthy, err
			}
		}
		poll = time.Now()
	}
}

// listen waits for a notification until the deadline and dispatches it; a partition behind
// (a gap, or a notification without its rows) is read by query.
func (f *ChangeFeed) listen(ctx context.Context, conn *pgx.Conn, deadline time.Time) error {
	select {
	case part := <-f.behind:
		return f.catchUp(ctx, conn, []int32{part})
	default:
	}
	waitCtx, cancel := context.WithDeadline(ctx, deadline)
	n, err := conn.WaitForNotification(waitCtx)
	cancel()
	if err != nil {
		if ctx.Err() != nil || conn.IsClosed() || !pgconn.Timeout(err) {
			return fmt.Errorf("wait for notification: %w", err)
		}
		return nil
	}
	if n.Channel == ReferenceChannel {
		if f.cfg.OnReference != nil {
			f.cfg.OnReference(RefScope(n.Payload))
		}
		return nil
	}
	if part, to, ok := peekNotify(n.Payload); ok && to <= f.lastOf(part) {
		return nil // rows this feed has (this process's own commits, published in-process)
	}
	var p notifyPayload
	if err := json.Unmarshal([]byte(n.Payload), &p); err != nil {
		return nil // an empty or foreign notification: the poll reads whatever it meant
	}
	page, err := notifiedRows(p)
	if err != nil {
		f.cfg.Logger.Warn("change feed: unreadable notification", "err", err)
	}
	if len(page) == 0 || !f.dispatch(p.Part, page) {
		if f.lastOf(p.Part) < p.To {
			return f.catchUp(ctx, conn, []int32{p.Part})
		}
	}
	return nil
}

// Publish hands over rows a transaction of this process committed (the trading projection's
// Committed): they are dispatched at once; rows out of order make the feed read the
// partition by query.
func (f *ChangeFeed) Publish(part int32, rows []query.Change) {
	if len(rows) > 0 && !f.dispatch(part, rows) && f.lastOf(part) < rows[len(rows)-1].Seq {
		select {
		case f.behind <- part:
		default: // already asked; the poll reads it anyway
		}
	}
}

// connected, at every connection, reads Postgres' start time and the partitions' heads. The
// first time it starts the feed at the heads: after a reconnection it goes on from where it
// stood, so nothing committed meanwhile is missed. Every later time it checks that the store
// still holds what the feed dispatched. The trading projection commits asynchronously
// (TradingConfig.Pool): a crash of Postgres takes back its last commits, change rows included,
// and it applies them again from the log, numbering their rows anew from the heads the crash
// left. So when Postgres restarted (its start time changed since the last connection) or a
// partition's head stands below the last row dispatched, the subscriptions that may have seen
// rows taken back end with ErrStoreRestarted (their clients resnapshot), and a partition found
// behind is read again from its head, so that waiters hear of the operations as applied again.
func (f *ChangeFeed) connected(ctx context.Context, conn *pgx.Conn) error {
	var started time.Time
	if err := conn.QueryRow(ctx, `SELECT pg_postmaster_start_time()`).Scan(&started); err != nil {
		return fmt.Errorf("postgres start time: %w", err)
	}
	heads, err := readHeads(ctx, conn)
	if err != nil {
		return fmt.Errorf("heads: %w", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.started.IsZero() { // the first connection
		for part, seq := range heads {
			f.last[part] = max(f.last[part], seq)
		}
		f.started = started
		f.readyOnce.Do(func() { close(f.ready) })
		return nil
	}
	restarted := !started.Equal(f.started)
	f.started = started
	back := map[int32]bool{}
	for part, last := range f.last {
		if head := heads[part]; head < last {
			back[part] = true
			f.last[part] = head
		}
	}
	if !restarted && len(back) == 0 {
		return nil
	}
	parts := back
	if restarted {
		parts = nil // every subscription: rows of any partition may have been taken back and numbered again
	}
	ended := f.endFollowing(parts, ErrStoreRestarted)
	f.cfg.Logger.Warn("change feed: Postgres restarted or took back rows the feed had read; their streams are closed",
		"restarted", restarted, "partitionsBehind", len(back), "streamsClosed", ended)
	return nil
}

func readHeads(ctx context.Context, conn *pgx.Conn) (map[int32]int64, error) {
	rows, err := conn.Query(ctx, `SELECT part, seq FROM rm.change_heads`)
	if err != nil {
		return nil, err
	}
	return collectPairs[int32, int64](rows)
}

// Ready is closed once Run has taken its starting position: every change committed after
// that is delivered.
func (f *ChangeFeed) Ready() <-chan struct{} { return f.ready }

func (f *ChangeFeed) lastOf(part int32) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[part]
}

// catchUp reads and dispatches every row after the last one of the given partitions (all
// partitions whose head moved, when parts is nil), a page at a time. Rows missing at the
// start of what a query reads were pruned (a partition's rows commit in the order of their
// numbers, so a reader never sees a later one before an earlier one): the feed goes on past
// them, and the subscriptions that would have received them end with ErrChangesLost.
func (f *ChangeFeed) catchUp(ctx context.Context, conn *pgx.Conn, parts []int32) error {
	var heads map[int32]int64
	if parts == nil {
		var err error
		if heads, err = readHeads(ctx, conn); err != nil {
			return fmt.Errorf("read change heads: %w", err)
		}
		for part, seq := range heads {
			if seq > f.lastOf(part) {
				parts = append(parts, part)
			}
		}
	}
	for _, part := range parts {
		for {
			after := f.lastOf(part)
			page, err := f.readPage(ctx, conn, part, after)
			if err != nil {
				return err
			}
			switch head, ok := heads[part]; {
			case len(page) > 0 && page[0].Seq > after+1:
				f.lost(part, page[0].Seq-1)
			case len(page) == 0 && ok && head > after:
				f.lost(part, head)
			}
			f.dispatch(part, page)
			if len(page) < changeFeedPage {
				break
			}
		}
	}
	return nil
}

func (f *ChangeFeed) readPage(ctx context.Context, conn *pgx.Conn, part int32, after int64) ([]query.Change, error) {
	rows, err := conn.Query(ctx, `SELECT seq, login, kind, coalesce(operation_id, ''), coalesce(api_key_id, 0),
		coalesce(client_order_id, ''), event, created_at
		FROM rm.changes WHERE part = $1 AND seq > $2 ORDER BY seq LIMIT $3`, part, after, changeFeedPage)
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", err)
	}
	page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (query.Change, error) {
		c := query.Change{Part: part}
		var raw []byte
		if err := row.Scan(&c.Seq, &c.Login, &c.Kind, &c.OperationID, &c.APIKeyID, &c.ClientOrderID, &raw,
			&c.CreatedAt); err != nil {
			return c, err
		}
		if err := decodeChange(&c, raw); err != nil {
			// Not a row this build can read: the change cannot be rendered; say so rather
			// than stop the feed.
			f.cfg.Logger.Error("change feed: undecodable row", "part", part, "seq", c.Seq, "kind", c.Kind, "err", err)
		}
		return c, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read changes: %w", err)
	}
	return page, nil
}

// notifiedRows are the rows a notification carried.
func notifiedRows(p notifyPayload) ([]query.Change, error) {
	out := make([]query.Change, 0, len(p.Rows))
	now := time.Now()
	var errs []error
	for i, r := range p.Rows {
		c := query.Change{Part: p.Part, Seq: p.rowSeq(i), Login: r.Login, Kind: r.Kind, OperationID: r.OperationID,
			APIKeyID: r.APIKeyID, ClientOrderID: r.ClientOrderID, CreatedAt: now}
		if err := decodeChange(&c, r.Event); err != nil {
			errs = append(errs, err)
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// lost moves partition part past rows that were pruned before the feed read them (up to
// seq), ending the subscriptions of its logins.
func (f *ChangeFeed) lost(part int32, seq int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.last[part] >= seq {
		return
	}
	f.cfg.Logger.Warn("change feed: rows were pruned before they were read; their streams are closed",
		"part", part, "after", f.last[part], "upTo", seq)
	f.last[part] = seq
	f.endFollowing(map[int32]bool{part: true}, ErrChangesLost)
}

// endFollowing ends, with err, the subscriptions following a login of the partitions
// (every subscription when parts is nil) (f.mu held).
func (f *ChangeFeed) endFollowing(parts map[int32]bool, err error) (ended int) {
	for s := range f.subs {
		if parts == nil || s.follows(parts) {
			delete(f.subs, s)
			s.end(err)
			ended++
		}
	}
	return ended
}

// readIntake reads how the service's intake stands (rm.intake) for the lag check.
func (f *ChangeFeed) readIntake(ctx context.Context, conn *pgx.Conn) error {
	if f.cfg.MaxLag < 0 {
		return nil
	}
	lag, err := readIntake(ctx, conn, time.Now())
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.intake = lag
	f.mu.Unlock()
	return nil
}

// lagCheckEvery is how often the subscriptions are held to MaxLag (an in-memory check).
const lagCheckEvery = 250 * time.Millisecond

// watchLag ends, until ctx ends, the subscriptions whose logins' intake has lagged past
// MaxLag.
func (f *ChangeFeed) watchLag(ctx context.Context) {
	wait.Every(ctx, lagCheckEvery, func() { f.endLagging(time.Now()) })
}

// endLagging ends the subscriptions whose logins' intake lags past MaxLag at now: every one
// while the feed itself has been down that long or a source of every partition lags (the
// relay), those of a partition whose trading projection lags.
func (f *ChangeFeed) endLagging(now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) == 0 {
		return
	}
	bound := now.Add(-f.cfg.MaxLag)
	past := func(since time.Time) bool { return !since.IsZero() && since.Before(bound) }
	if past(f.intake.all) || !f.live && past(f.stateSince) {
		ended := f.endFollowing(nil, ErrIntakeLagged)
		f.cfg.Logger.Warn("change feed: the intake of every partition lags; every stream is closed",
			"relayBehindSince", f.intake.all, "feedLive", f.live, "feedStateSince", f.stateSince, "streams", ended)
		return
	}
	var parts map[int32]bool
	for part, since := range f.intake.parts {
		if past(since) {
			if parts == nil {
				parts = map[int32]bool{}
			}
			parts[part] = true
		}
	}
	if parts == nil {
		return
	}
	if ended := f.endFollowing(parts, ErrIntakeLagged); ended > 0 {
		f.cfg.Logger.Warn("change feed: the trading projection lags on some partitions; their streams are closed",
			"partitions", len(parts), "streams", ended)
	}
}

// dispatch delivers rows of part that follow the last one dispatched; it reports false when
// they do not (a gap: the caller reads the partition by query). Rows already dispatched are
// dropped.
func (f *ChangeFeed) dispatch(part int32, rows []query.Change) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	var matched subsByLogin
	for _, c := range rows {
		last := f.last[part]
		if c.Seq <= last {
			continue
		}
		if c.Seq != last+1 {
			return false
		}
		f.last[part] = c.Seq
		f.deliver(c, &matched)
	}
	return true
}

// subsByLogin holds, for one dispatch, the subscriptions each login of its rows matches:
// every subscription's Match is asked once per login of the dispatch instead of once per row
// (an order's rows are of one login; a page under load holds hundreds of rows of a few).
type subsByLogin map[int64][]*Subscription

// of returns the subscriptions login matches (f.mu held).
func (m *subsByLogin) of(f *ChangeFeed, login int64) []*Subscription {
	if subs, ok := (*m)[login]; ok {
		return subs
	}
	if *m == nil {
		*m = subsByLogin{}
	}
	var subs []*Subscription
	for s := range f.subs {
		if s.scope.Match(login) {
			subs = append(subs, s)
		}
	}
	(*m)[login] = subs
	return subs
}

// deliver hands one change to its waiters, observers and subscriptions (f.mu held), the
// subscriptions as matched tells.
func (f *ChangeFeed) deliver(c query.Change, matched *subsByLogin) {
	for _, o := range f.observers {
		o(c)
	}
	if c.Kind == query.ChangeOperation && c.Operation != nil && c.OperationID != "" {
		st := *c.Operation
		f.recent.put(c.OperationID, st)
		for ch := range f.watchers[c.OperationID] {
			offer(ch, st)
		}
	}
	if !query.IsUserStreamKind(c.Kind) || c.Fact == nil {
		return
	}
	for _, s := range matched.of(f, c.Login) {
		if _, ok := f.subs[s]; !ok {
			continue // ended by an earlier row of this dispatch
		}
		select {
		case s.ch <- c:
		default:
			delete(f.subs, s)
			s.end(ErrLagged)
		}
	}
}

// offer puts st in ch, replacing a state nobody has taken yet (a waiter wants the newest).
func offer(ch chan query.OperationState, st query.OperationState) {
	for {
		select {
		case ch <- st:
			return
		default:
		}
		select {
		case old := <-ch:
			if old.Version > st.Version {
				st = old
			}
		default:
		}
	}
}

// WatchOperation delivers every OPERATION change of operationID from now on, starting with the
// latest one committed in the last Recent when there is one; the channel holds the newest
// state not yet taken. Call the returned function to stop watching.
func (f *ChangeFeed) WatchOperation(operationID string) (<-chan query.OperationState, func()) {
	ch := make(chan query.OperationState, 1)
	f.mu.Lock()
	set := f.watchers[operationID]
	if set == nil {
		set = map[chan query.OperationState]struct{}{}
		f.watchers[operationID] = set
	}
	set[ch] = struct{}{}
	if st, ok := f.recent.get(operationID); ok {
		ch <- st
	}
	f.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if set := f.watchers[operationID]; set != nil {
				delete(set, ch)
				if len(set) == 0 {
					delete(f.watchers, operationID)
				}
			}
		})
	}
}

// Observe calls fn with every change dispatched, in each partition's order, on the feed's
// goroutine (fn must be quick and must not call the feed).
func (f *ChangeFeed) Observe(fn func(query.Change)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observers = append(f.observers, fn)
}

// Subscribe delivers, in each partition's order, every DEAL, ORDER_UPDATE, POSITION_UPDATE
// and ACCOUNT_UPDATE change committed after it returns (and after the feed is Ready) whose
// login the scope matches (Match runs on the feed's goroutine and must be quick). buf is the
// subscription's buffer; a subscriber that lets it fill is ended with ErrLagged. It is ended
// with ErrIntakeLagged once the intake of one of its logins has lagged past MaxLag (at
// once when it already has), with ErrChangesLost when rows of its logins were pruned unread.
func (f *ChangeFeed) Subscribe(scope query.Scope, buf int) query.Subscription {
	s := &Subscription{scope: scope, ch: make(chan query.Change, max(buf, 1)), done: make(chan struct{}), feed: f}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		s.end(ErrFeedStopped)
		return s
	}
	f.subs[s] = struct{}{}
	return s
}

func (f *ChangeFeed) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	for s := range f.subs {
		delete(f.subs, s)
		s.end(ErrFeedStopped)
	}
}

// Subscription is one subscriber's view of the change feed.
type Subscription struct {
	feed  *ChangeFeed
	scope query.Scope
	ch    chan query.Change
	done  chan struct{}

	once sync.Once
	mu   sync.Mutex
	err  error
}

// follows reports whether a login of the subscription is in one of the partitions.
func (s *Subscription) follows(parts map[int32]bool) bool {
	if s.scope.Logins == nil {
		return true
	}
	for _, login := range s.scope.Logins() {
		if parts[loginPartition(login)] {
			return true
		}
	}
	return false
}

// C delivers the changes. It is never closed: select on Done as well.
func (s *Subscription) C() <-chan query.Change { return s.ch }

// Done is closed when the subscription ends (Close, ErrLagged or an error wrapping it,
// ErrFeedStopped).
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err says why the subscription ended: ErrLagged, ErrIntakeLagged, ErrChangesLost,
// ErrFeedStopped, or nil (Close, or not ended).
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the subscription; nothing more is delivered.
func (s *Subscription) Close() {
	s.feed.mu.Lock()
	delete(s.feed.subs, s)
	s.feed.mu.Unlock()
	s.end(nil)
}

func (s *Subscription) end(err error) {
	s.once.Do(func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		close(s.done)
	})
}

// factTypes are the facts the user-stream kinds carry.
var factTypes = map[string]func() events.Event{
	query.ChangeDeal:           func() events.Event { return &events.DealAdded{} },
	query.ChangeOrderUpdate:    func() events.Event { return &events.OrderChanged{} },
	query.ChangePositionUpdate: func() events.Event { return &events.PositionChanged{} },
	query.ChangeAccountUpdate:  func() events.Event { return &events.AccountChanged{} },
}

// decodeChange reads what a row's event holds: the fact of a user-stream kind, the state of
// an OPERATION row.
func decodeChange(c *query.Change, raw []byte) error {
	if c.Kind == query.ChangeOperation {
		var st query.OperationState
		if err := json.Unmarshal(raw, &st); err != nil {
			return fmt.Errorf("decode OPERATION row: %w", err)
		}
		c.Operation = &st
		return nil
	}
	mk, ok := factTypes[c.Kind]
	if !ok {
		return fmt.Errorf("no fact for change kind %q", c.Kind)
	}
	ev := mk()
	if err := json.Unmarshal(raw, ev); err != nil {
		return fmt.Errorf("decode %s fact: %w", c.Kind, err)
	}
	c.Fact = ev
	return nil
}

// recentStates keeps the latest state of each operation for a while, in two generations:
// an entry lives between one and two windows.
type recentStates struct {
	window    time.Duration
	rotated   time.Time
	cur, prev map[string]query.OperationState
}

func newRecentStates(window time.Duration) recentStates {
	return recentStates{window: window, rotated: time.Now(), cur: map[string]query.OperationState{}}
}

func (r *recentStates) put(id string, st query.OperationState) {
	if time.Since(r.rotated) > r.window {
		r.prev, r.cur, r.rotated = r.cur, map[string]query.OperationState{}, time.Now()
	}
	if old, ok := r.cur[id]; ok && old.Version > st.Version {
		return
	}
	r.cur[id] = st
}

func (r *recentStates) get(id string) (query.OperationState, bool) {
	if st, ok := r.cur[id]; ok {
		return st, true
	}
	st, ok := r.prev[id]
	return st, ok
}
