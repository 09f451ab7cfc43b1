package query

import (
	"errors"
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

// ChangeFeed delivers the change feed to user streams.
type ChangeFeed interface {
	// Subscribe delivers the user-stream changes of the logins match accepts (match is called
	// from the feed's goroutine and must be cheap), buffering up to buf; a subscriber that
	// falls further behind is ended with ErrLagged.
	Subscribe(match func(login int64) bool, buf int) Subscription
}

// Subscription is one subscriber's view of the change feed.
type Subscription interface {
	// C delivers the changes; it is never closed: select on Done as well.
	C() <-chan Change
	// Done is closed when the subscription ends; Err then tells why: ErrLagged when the
	// subscriber fell behind, another error when the feed stopped, nil after Close.
	Done() <-chan struct{}
	Err() error
	Close()
}
