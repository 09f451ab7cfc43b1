package trading

// Status is an operation's or an order's status as the wire names it.
type Status string

// Statuses. Market executions: ACCEPTED, PARTIALLY_FILLED, FILLED, REJECTED, IN_DOUBT;
// pending orders: NEW, PARTIALLY_FILLED, FILLED, CANCELED, EXPIRED, REJECTED. A client treats
// a status it does not know as non-terminal.
const (
	StatusAccepted        Status = "ACCEPTED"
	StatusNew             Status = "NEW"
	StatusPartiallyFilled Status = "PARTIALLY_FILLED"
	StatusFilled          Status = "FILLED"
	StatusCanceled        Status = "CANCELED"
	StatusExpired         Status = "EXPIRED"
	StatusRejected        Status = "REJECTED"
	StatusInDoubt         Status = "IN_DOUBT"
)

// IsFill reports whether the status says the operation executed (fully or partly).
func (s Status) IsFill() bool { return s == StatusFilled || s == StatusPartiallyFilled }

// IsRefusal reports whether the status is answered as an error (REJECTED, IN_DOUBT): the
// response is the error envelope with the operation's code.
func (s Status) IsRefusal() bool { return s == StatusRejected || s == StatusInDoubt }
