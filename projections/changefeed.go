package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"tradesvc/events"
	"tradesvc/query"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrLagged ends a subscription whose buffer was full when a change was due.
var ErrLagged = query.ErrLagged

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
}

// Validate reports every problem at once.
func (c ChangeFeedConfig) Validate() error {
	var errs []error
	if c.ConnString == "" {
		errs = append(errs, errors.New("projections: change feed needs a connection string"))
	}
	if c.Poll < 0 {
		errs = append(errs, errors.New("projections: change feed poll interval must not be negative"))
	}
	return errors.Join(errs...)
}

// changeFeedPage is how many rows one catch-up query reads.
const changeFeedPage = 1000

// ChangeFeed tails rm.changes in a gateway: LISTEN rm_changes on a dedicated connection,
// catch-up by "seq > last" on every notification and every Poll, reconnection with backoff.
// It wakes operation waiters (RESULT) and feeds user-stream subscriptions. It starts at the
// newest row when Run first connects: history is not replayed.
type ChangeFeed struct {
	cfg ChangeFeedConfig

	ready     chan struct{}
	readyOnce sync.Once

	mu         sync.Mutex
	last       int64
	positioned bool
	stopped    bool
	watchers   map[string]map[chan struct{}]struct{}
	subs       map[*Subscription]struct{}
	live       bool      // a session reads the feed
	lastErr    error     // why the last session ended
	stateSince time.Time // when live or lastErr last changed
}

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
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Poll == 0 {
		cfg.Poll = 500 * time.Millisecond
	}
	return &ChangeFeed{cfg: cfg, ready: make(chan struct{}), watchers: map[string]map[chan struct{}]struct{}{},
		subs: map[*Subscription]struct{}{}}, nil
}

// Run reads the feed until ctx ends, reconnecting with backoff; it returns nil then. Its
// subscriptions end with ErrFeedStopped.
func (f *ChangeFeed) Run(ctx context.Context) error {
	defer f.stop()
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

// session is one connection's life: position (first time only), LISTEN, then catch up on
// every notification or poll tick. healthy says it got as far as reading the feed.
func (f *ChangeFeed) session(ctx context.Context) (healthy bool, err error) {
	conn, err := pgx.Connect(ctx, f.cfg.ConnString)
	if err != nil {
		return false, fmt.Errorf("connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if cerr := conn.Close(closeCtx); cerr != nil {
			f.cfg.Logger.Debug("change feed: close connection", "err", cerr)
		}
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+ChangesChannel); err != nil {
		return false, fmt.Errorf("listen: %w", err)
	}
	if err := f.position(ctx, conn); err != nil {
		return false, err
	}
	for {
		if err := f.catchUp(ctx, conn); err != nil {
			return healthy, err
		}
		if !healthy {
			f.setState(true, nil)
		}
		healthy = true
		waitCtx, cancel := context.WithTimeout(ctx, f.cfg.Poll)
		_, err := conn.WaitForNotification(waitCtx)
		cancel()
		if err != nil && (ctx.Err() != nil || conn.IsClosed() || !pgconn.Timeout(err)) {
			return healthy, fmt.Errorf("wait for notification: %w", err)
		}
	}
}

// position starts the feed at the newest row, once: after a reconnection it goes on from
// where it stood, so nothing committed meanwhile is missed.
func (f *ChangeFeed) position(ctx context.Context, conn *pgx.Conn) error {
	f.mu.Lock()
	done := f.positioned
	f.mu.Unlock()
	if done {
		return nil
	}
	var last int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM rm.changes`).Scan(&last); err != nil {
		return fmt.Errorf("position: %w", err)
	}
	f.mu.Lock()
	f.last, f.positioned = last, true
	f.mu.Unlock()
	f.readyOnce.Do(func() { close(f.ready) })
	return nil
}

// Ready is closed once Run has taken its starting position: every change committed after
// that is delivered.
func (f *ChangeFeed) Ready() <-chan struct{} { return f.ready }

// catchUp reads and dispatches every row after the last one, a page at a time.
func (f *ChangeFeed) catchUp(ctx context.Context, conn *pgx.Conn) error {
	for {
		f.mu.Lock()
		after := f.last
		f.mu.Unlock()
		rows, err := conn.Query(ctx, `SELECT seq, login, kind, coalesce(operation_id, ''), coalesce(api_key_id, 0),
			coalesce(client_order_id, ''), event, coalesce((event->>'answered')::boolean, true), created_at
			FROM rm.changes WHERE seq > $1 ORDER BY seq LIMIT $2`,
			after, changeFeedPage)
		if err != nil {
			return fmt.Errorf("read changes: %w", err)
		}
		page, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (query.Change, error) {
			var c query.Change
			var raw []byte
			if err := row.Scan(&c.Seq, &c.Login, &c.Kind, &c.OperationID, &c.APIKeyID, &c.ClientOrderID, &raw, &c.Answered,
				&c.CreatedAt); err != nil {
				return c, err
			}
			if query.IsUserStreamKind(c.Kind) {
				if c.Fact, err = decodeFact(c.Kind, raw); err != nil {
					// Not a fact this build can read (a row older than the format): the
					// stream cannot render it; say so rather than stop the feed.
					f.cfg.Logger.Error("change feed: undecodable fact", "seq", c.Seq, "kind", c.Kind, "err", err)
				}
			}
			return c, nil
		})
		if err != nil {
			return fmt.Errorf("read changes: %w", err)
		}
		f.dispatch(page)
		if len(page) < changeFeedPage {
			return nil
		}
	}
}

func (f *ChangeFeed) dispatch(page []query.Change) {
	if len(page) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range page {
		f.last = c.Seq
		// An operation's answer is in its OPERATION row (every change of its status, codes,
		// deals or decision writes one): its DEAL and ORDER_UPDATE rows need not wake waiters,
		// nor does an OPERATION row of a state that answers nobody yet (ACCEPTED, a fill its
		// deals have not confirmed): the waiter would read and wait again.
		if c.Kind == query.ChangeOperation && c.OperationID != "" && c.Answered {
			for ch := range f.watchers[c.OperationID] {
				select {
				case ch <- struct{}{}:
				default: // a wake-up is already pending
				}
			}
		}
		if !query.IsUserStreamKind(c.Kind) || c.Fact == nil {
			continue
		}
		for s := range f.subs {
			if !s.match(c.Login) {
				continue
			}
			select {
			case s.ch <- c:
			default:
				delete(f.subs, s)
				s.end(ErrLagged)
			}
		}
	}
}

// WatchOperation registers for wake-ups on every OPERATION change of operationID that answers
// it (Change.Answered): the channel holds at most one pending wake-up. Call the returned
// function to stop watching.
func (f *ChangeFeed) WatchOperation(operationID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	set := f.watchers[operationID]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		f.watchers[operationID] = set
	}
	set[ch] = struct{}{}
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

// Subscribe delivers, in seq order, every DEAL, ORDER_UPDATE, POSITION_UPDATE and
// ACCOUNT_UPDATE change committed after it returns (and after the feed is Ready) whose login
// match accepts (match runs on the feed's goroutine and must be quick). buf is the
// subscription's buffer; a subscriber that lets it fill is ended with ErrLagged.
func (f *ChangeFeed) Subscribe(match func(login int64) bool, buf int) query.Subscription {
	s := &Subscription{match: match, ch: make(chan query.Change, max(buf, 1)), done: make(chan struct{}), feed: f}
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
	match func(login int64) bool
	ch    chan query.Change
	done  chan struct{}

	once sync.Once
	mu   sync.Mutex
	err  error
}

// C delivers the changes. It is never closed: select on Done as well.
func (s *Subscription) C() <-chan query.Change { return s.ch }

// Done is closed when the subscription ends (Close, ErrLagged, ErrFeedStopped).
func (s *Subscription) Done() <-chan struct{} { return s.done }

// Err says why the subscription ended: ErrLagged, ErrFeedStopped, or nil (Close, or not
// ended).
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

// decodeFact reads the fact a change row of kind holds.
func decodeFact(kind string, raw []byte) (events.Event, error) {
	mk, ok := factTypes[kind]
	if !ok {
		return nil, fmt.Errorf("no fact for change kind %q", kind)
	}
	ev := mk()
	if err := json.Unmarshal(raw, ev); err != nil {
		return nil, fmt.Errorf("decode %s fact: %w", kind, err)
	}
	return ev, nil
}
