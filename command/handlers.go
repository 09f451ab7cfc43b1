package command

import (
	"errors"
	"time"
)

// Handlers are every command handler of the service (the Commands half of the application).
type Handlers struct {
	PlaceOrder     PlaceOrderHandler
	ModifyOrder    ModifyOrderHandler
	CancelOrder    CancelOrderHandler
	ClosePosition  ClosePositionHandler
	ModifyPosition ModifyPositionHandler
	CloseAll       CloseAllHandler
	BatchOrders    BatchOrdersHandler
}

// Deps are what the command handlers need: their own idempotency records, the log, and the
// read models they validate against.
type Deps struct {
	Records    *Records
	Tags       TagSource
	Log        Appender
	Operations OperationReader
	Orders     OrderReader
	Positions  PositionReader
	Accounts   AccountReader
	Symbols    SymbolReader
	Quotes     QuoteReader
	// QuoteMaxAge bounds the age of a quote used for price checks (default 30 s).
	QuoteMaxAge time.Duration
	Now         func() time.Time
}

// NewHandlers builds every command handler; it reports every missing dependency at once.
func NewHandlers(d Deps) (Handlers, error) {
	if d.Now == nil {
		d.Now = time.Now
	}
	v, err := NewValidator(d.Symbols, d.Quotes, d.QuoteMaxAge)
	if err != nil {
		return Handlers{}, err
	}
	s := Shared{Records: d.Records, Tags: d.Tags, Log: d.Log, Operations: d.Operations, Now: d.Now}
	var h Handlers
	var errs [7]error
	h.PlaceOrder, errs[0] = NewPlaceOrderHandler(s, v)
	h.ModifyOrder, errs[1] = NewModifyOrderHandler(s, v, d.Orders)
	h.CancelOrder, errs[2] = NewCancelOrderHandler(s, v, d.Orders)
	h.ClosePosition, errs[3] = NewClosePositionHandler(s, v, d.Positions)
	h.ModifyPosition, errs[4] = NewModifyPositionHandler(s, v, d.Positions)
	h.CloseAll, errs[5] = NewCloseAllHandler(s, v, d.Positions)
	h.BatchOrders, errs[6] = NewBatchOrdersHandler(s, v, d.Accounts)
	return h, errors.Join(errs[:]...)
}
