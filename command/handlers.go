package command

import (
	"context"
	"time"

	"tradesvc/events/trading"
	"tradesvc/infra/check"
)

// Handlers are every command handler of the service (the Commands half of the application).
type Handlers struct {
	PlaceOrder     PlaceOrderHandler
	ModifyOrder    ModifyOrderHandler
	CancelOrder    CancelOrderHandler
	ClosePosition  ClosePositionHandler
	ModifyPosition ModifyPositionHandler
	CloseAll       CloseAllHandler

	core *core
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
	Symbols    SymbolReader
	Quotes     QuoteReader
	// QuoteMaxAge bounds the age of a quote used for price checks (default 30 s).
	QuoteMaxAge time.Duration
	Now         func() time.Time
	// Stage, when set, is told how long the stages of the order path this side runs took
	// (metrics): "recorded" and "queued", from the request's arrival.
	Stage func(stage string, took time.Duration)
	// Settlements, when set, lets a retry of an unsettled operation wait (up to SettleWait)
	// for the settlement it asked for, so that one retry answers it (settle.go).
	Settlements SettleAwaiter
	// EarlyClaims, when set, is the executor of this process: the record of an operation whose
	// partition it holds carries its claim (EarlyClaimer).
	EarlyClaims EarlyClaimer
}

// Validate reports every missing dependency at once.
func (d Deps) Validate() error {
	var errs check.Problems
	errs.If(d.Records == nil, "command: no idempotency records")
	errs.If(d.Tags == nil, "command: no correlation tags")
	errs.If(d.Log == nil, "command: no appender")
	errs.If(d.Operations == nil, "command: no operations read model")
	errs.If(d.Orders == nil, "command: no orders read model")
	errs.If(d.Positions == nil, "command: no positions read model")
	errs.If(d.Symbols == nil, "command: no symbols read model")
	errs.If(d.Quotes == nil, "command: no quotes")
	return errs.Err()
}

// NewHandlers builds every command handler.
func NewHandlers(d Deps) (Handlers, error) {
	if err := d.Validate(); err != nil {
		return Handlers{}, err
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	v, err := NewValidator(d.Symbols, d.Quotes, d.QuoteMaxAge)
	if err != nil {
		return Handlers{}, err
	}
	if d.Stage == nil {
		d.Stage = func(string, time.Duration) {}
	}
	appender := &boundedLog{Appender: d.Log, wait: AppendWait, now: d.Now}
	c := &core{records: d.Records, tags: d.Tags, log: appender, ops: d.Operations, symbols: d.Symbols, now: d.Now,
		stage: d.Stage, settled: d.Settlements, claims: d.EarlyClaims}
	return Handlers{
		PlaceOrder:     PlaceOrderHandler{core: c, v: v},
		ModifyOrder:    ModifyOrderHandler{core: c, v: v, orders: d.Orders},
		CancelOrder:    CancelOrderHandler{core: c, orders: d.Orders},
		ClosePosition:  ClosePositionHandler{core: c, v: v, positions: d.Positions},
		ModifyPosition: ModifyPositionHandler{core: c, v: v, positions: d.Positions},
		CloseAll:       CloseAllHandler{core: c, positions: d.Positions},
		core:           c,
	}, nil
}

// Coverage is what the command side handles: one handler per kind.
func (h Handlers) Coverage() trading.Coverage {
	return trading.Coverage{Place: "command handlers (command)", KindsDeclared: true,
		Kinds: []trading.Kind{trading.KindPlaceOrder, trading.KindModifyOrder, trading.KindCancelOrder,
			trading.KindClosePosition, trading.KindModifyPosition, trading.KindCloseAll}}
}

// Refused answers a request of kind that the gateway could not decode (cause, a refusal with
// the spec's code): a retry of an operation the client order id recorded is answered from
// its record, as every retry is; anything else gets cause.
func (h Handlers) Refused(ctx context.Context, b Base, kind trading.Kind, cause error) (Result, error) {
	return h.core.refused(ctx, b, kind, cause)
}

// Recorded reports whether the caller's key holds a record for clientOrderID: a request
// carrying it is a retry, answered from its record (the gateway never sheds one).
func (h Handlers) Recorded(ctx context.Context, apiKeyID int64, clientOrderID string) (bool, error) {
	return h.core.records.Exists(ctx, apiKeyID, clientOrderID)
}
