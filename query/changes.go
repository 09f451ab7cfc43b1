package query

import (
	"errors"
	"fmt"
	"time"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// The change feed (rm.changes): what the trading projection committed that a client can see,
// in commit order. RESULT waits are woken by its OPERATION rows, user data streams render its
// facts. The projection writes it (projections.Trading) and the gateway reads it
// (projections.ChangeFeed) through these types.

// Change kinds: the user stream's event types, and OPERATION (an operation's derived state
// changed; never sent to clients).
const (
	ChangeDeal           = "DEAL"
	ChangeOrderUpdate    = "ORDER_UPDATE"
	ChangePositionUpdate = "POSITION_UPDATE"
	ChangeAccountUpdate  = "ACCOUNT_UPDATE"
	ChangeOperation      = "OPERATION"
)

// IsUserStreamKind reports whether changes of kind reach user data streams.
func IsUserStreamKind(kind string) bool {
	return kind == ChangeDeal || kind == ChangeOrderUpdate || kind == ChangePositionUpdate || kind == ChangeAccountUpdate
}

// Change is one row of the change feed. Rows are numbered per partition of the trading
// topics (Part): a login's changes are all in one partition, in commit order.
type Change struct {
	Part  int32
	Seq   int64
	Login int64
	// Kind is DEAL, ORDER_UPDATE, POSITION_UPDATE, ACCOUNT_UPDATE or OPERATION.
	Kind string
	// OperationID is the operation the change belongs to ("" when none).
	OperationID string
	// APIKeyID and ClientOrderID name the key that may see C on a DEAL or ORDER_UPDATE frame
	// and the value of C (0 / "" when the change was not caused through the API).
	APIKeyID      int64
	ClientOrderID string
	// Fact is the trade-server fact a user-stream change shows (*events.DealAdded,
	// *events.OrderChanged, *events.PositionChanged, *events.AccountChanged); the stream
	// renders it. Nil for OPERATION rows.
	Fact events.Event
	// Operation is what an OPERATION row says of its operation (nil for the other kinds).
	Operation *OperationState
	CreatedAt time.Time
}

// OperationState is an operation's derived state as an OPERATION change carries it: what a
// waiter answers with, without reading the read model.
type OperationState struct {
	trading.Derived
	// Version orders the states of one operation.
	Version int64 `json:"version"`
	// Answered: the state answers the endpoints that wait (Operation.Answered).
	Answered bool `json:"answered"`
}

// ErrLagged ends a subscription whose buffer was full when a change was due: nothing is
// dropped silently, the subscriber must resnapshot.
var ErrLagged = errors.New("change-feed subscriber fell behind")

// ErrIntakeLagged ends a subscription when the service's own intake (the relay, the trading
// projection, the change feed itself) has lagged for one of its logins for longer than the
// feed's bound: the changes it should see are not coming, the subscriber must resnapshot.
var ErrIntakeLagged = fmt.Errorf("the service's intake lags for a login of the subscription: %w", ErrLagged)

// ErrChangesLost ends a subscription when rows of its logins' partition were pruned before
// the feed read them (it was down for longer than the change-feed retention): they can never
// be delivered, the subscriber must resnapshot.
var ErrChangesLost = fmt.Errorf("change-feed rows were pruned before they were delivered: %w", ErrLagged)

// ErrStoreRestarted ends a subscription when the read models' store took back rows the feed
// had delivered (a crash of Postgres takes back the trading projection's last asynchronous
// commits, which it applies again): what was delivered may differ from what the read models
// now hold, the subscriber must resnapshot (wraps ErrChangesLost).
var ErrStoreRestarted = fmt.Errorf("the read models' store restarted and took back delivered changes: %w", ErrChangesLost)

// Scope is the logins a subscription follows. Match is asked of every change, on the feed's
// goroutine: it must be quick. Logins lists them when the feed must tell whether their
// intake lags (rarely); nil stands for every login.
type Scope struct {
	Match  func(login int64) bool
	Logins func() []int64
}

// ChangeFeed delivers the change feed to user streams.
type ChangeFeed interface {
	// Subscribe delivers the user-stream changes of the logins scope matches, buffering up
	// to buf; a subscriber that falls further behind is ended with ErrLagged, one whose
	// logins' intake lags with ErrIntakeLagged, one whose changes were pruned unread with
	// ErrChangesLost (both wrap ErrLagged).
	Subscribe(scope Scope, buf int) Subscription
}

// Subscription is one subscriber's view of the change feed.
type Subscription interface {
	// C delivers the changes; it is never closed: select on Done as well.
	C() <-chan Change
	// Done is closed when the subscription ends; Err then tells why: an error wrapping
	// ErrLagged when the subscriber or the service fell behind, another error when the feed
	// stopped, nil after Close.
	Done() <-chan struct{}
	Err() error
	Close()
}
