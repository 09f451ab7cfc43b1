package query

import (
	"context"
	"fmt"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
)

// OrderLookup reads what GET /v1/order needs from the trading read models.
type OrderLookup interface {
	// Order returns order orderID of login, open or done, with the client order id of the
	// operation whose tag it carries.
	Order(ctx context.Context, login, orderID int64) (trading.Order, bool, error)
	// Operation returns an operation by id.
	Operation(ctx context.Context, operationID string) (trading.Operation, bool, error)
	// OperationByClientID returns the operation a key recorded under a client order id.
	OperationByClientID(ctx context.Context, apiKeyID int64, clientOrderID string) (trading.Operation, bool, error)
}

// OrderQuery asks for one order of Login by OrderID or, when OrderID is nil, by the caller's
// OrigClientOrderID. The caller has checked that Login is in the key's scope.
type OrderQuery struct {
	Login             int64
	APIKeyID          int64
	OrderID           *int64
	OrigClientOrderID string
}

// OrderHandler answers GET /v1/order.
type OrderHandler struct{ withSymbols[OrderLookup] }

func errNoSuchOrder() error {
	return events.Reject(events.CodeNoSuchOrder, "Order does not exist.")
}

// errSweepID is the defined answer to GET /v1/order by the client order id of a
// DELETE /v1/allOpenPositions sweep. The sweep and every leg share that id (the legs' DEAL
// and ORDER_UPDATE events carry it in C, so a bot can route them to the sweep), so no one
// order answers to it: a leg picked among several would tell a bot that the whole sweep is
// FILLED or REJECTED when only that leg is. The code is -2013 whichever row the id finds;
// the message says where the legs are.
func errSweepID(coid string) error {
	return events.Reject(events.CodeNoSuchOrder, "No single order has origClientOrderId '"+coid+
		"': it names a close-all sweep (DELETE /v1/allOpenPositions), one close per position. Query a leg by the orderId its "+
		"status carries; repeating the sweep with the same newClientOrderId returns every leg's positionId and status.")
}

// Handle returns the order. By orderId it is the trade server's order (-2013 when the login
// has none); by origClientOrderId it is the caller's operation (-2013 when the key recorded
// none for this login), whose status is the operation's derived status: a pending placement
// whose orderId the trade server never answered keeps its queued status. The id of a
// close-all sweep names no single order: always -2013, with a message saying so (errSweepID).
func (h OrderHandler) Handle(ctx context.Context, q OrderQuery) (OrderRecord, error) {
	switch {
	case q.OrderID != nil:
		return h.byOrderID(ctx, q)
	case q.OrigClientOrderID != "":
		return h.byClientID(ctx, q)
	}
	return OrderRecord{}, events.Reject(events.CodeMandatoryParam,
		"Param 'orderId' or 'origClientOrderId' must be sent, but both were empty/null!")
}

func (h OrderHandler) digits(ctx context.Context, symbol string) (symbolDigits, error) {
	if symbol == "" {
		return symbolDigits{}, nil
	}
	spec, ok, err := h.symbols.Symbol(ctx, symbol)
	if err != nil {
		return symbolDigits{}, fmt.Errorf("look up symbol %q: %w", symbol, err)
	}
	return symbolDigits{digits: spec.Digits, known: ok}, nil
}

func (h OrderHandler) byOrderID(ctx context.Context, q OrderQuery) (OrderRecord, error) {
	o, ok, err := h.read.Order(ctx, q.Login, *q.OrderID)
	if err != nil {
		return OrderRecord{}, fmt.Errorf("read order %d: %w", *q.OrderID, err)
	}
	if !ok {
		return OrderRecord{}, errNoSuchOrder()
	}
	sd, err := h.digits(ctx, o.Symbol)
	if err != nil {
		return OrderRecord{}, err
	}
	r := orderRecord(o, q.APIKeyID, sd)
	r.ExecutedVolume = plain(dec.Sub(o.VolumeInitial, o.VolumeCurrent))
	r.PositionID = o.PositionID
	if o.OperationID != "" && o.APIKeyID == q.APIKeyID {
		op, ok, err := h.read.Operation(ctx, o.OperationID)
		if err != nil {
			return OrderRecord{}, fmt.Errorf("read operation of order %d: %w", o.OrderID, err)
		}
		if ok && op.OrderID == o.OrderID {
			r.DealID = op.DealID
		}
	}
	return r, nil
}

func (h OrderHandler) byClientID(ctx context.Context, q OrderQuery) (OrderRecord, error) {
	op, ok, err := h.read.OperationByClientID(ctx, q.APIKeyID, q.OrigClientOrderID)
	if err != nil {
		return OrderRecord{}, fmt.Errorf("read operation %q: %w", q.OrigClientOrderID, err)
	}
	if ok && op.Login == q.Login && (op.Kind == trading.KindCloseAll || op.SweepID != "") {
		return OrderRecord{}, errSweepID(q.OrigClientOrderID) // the sweep's own row or one of its legs
	}
	if !ok || op.Login != q.Login || !op.Kind.CreatesOrder() {
		return OrderRecord{}, errNoSuchOrder()
	}
	var row *trading.Order
	if op.OrderID != 0 {
		o, ok, err := h.read.Order(ctx, q.Login, op.OrderID)
		if err != nil {
			return OrderRecord{}, fmt.Errorf("read order %d: %w", op.OrderID, err)
		}
		if ok {
			row = &o
		}
	}
	sd, err := h.digits(ctx, op.Symbol)
	if err != nil {
		return OrderRecord{}, err
	}
	return operationOrder(op, row, sd), nil
}

// operationOrder renders an operation as an order: the request, and once the trade server
// has the order, its figures; the status is always the operation's.
func operationOrder(op trading.Operation, row *trading.Order, sd symbolDigits) OrderRecord {
	pending := op.Kind.Rests(op.Type)
	r := OrderRecord{Login: op.Login, OrderID: op.OrderID, ClientOrderID: op.ClientOrderID, Symbol: op.Symbol,
		Side: op.Side, Type: op.Type, Status: string(op.Status), StopLimitPrice: sd.stopPtr(op.StopLimitPrice),
		SL: sd.stopPtr(op.SL), TP: sd.stopPtr(op.TP), Comment: op.Comment + op.Tag, Time: op.RequestedAt,
		UpdateTime: op.UpdatedAt, DealID: op.DealID, PositionID: op.PositionID, Code: op.Code,
		MT5RetCode: op.Retcode}
	if op.Code != 0 {
		r.Msg = op.Msg // a message explains a refusal; a success needs none
	}
	if r.Type == "" && op.Kind.CreatesOrder() {
		r.Type = trading.TypeMarket // a close names no type: it is a market order
	}
	if op.Volume != nil {
		r.Volume = plain(*op.Volume)
		rem := *op.Volume
		if op.ExecutedVolume != nil {
			rem = dec.Sub(rem, *op.ExecutedVolume)
		}
		r.RemainingVolume = plain(rem)
	}
	if op.ExecutedVolume != nil {
		r.ExecutedVolume = plain(*op.ExecutedVolume)
	}
	switch {
	case pending && op.Price != nil:
		r.Price = sd.price(*op.Price)
	case !pending && op.ExecPrice != nil:
		r.Price = sd.price(*op.ExecPrice)
	}
	if pending {
		r.TimeInForce, r.Expiration = op.TimeInForce, op.Expiration
		if r.TimeInForce == "" {
			r.TimeInForce = "GTC"
		}
	}
	if row != nil {
		if r.Volume == "" {
			r.Volume = plain(row.VolumeInitial)
		}
		r.RemainingVolume = plain(row.VolumeCurrent)
		if r.Price == "" || pending {
			r.Price = sd.price(row.Price)
		}
		r.StopLimitPrice, r.SL, r.TP = sd.stop(row.StopLimitPrice), sd.stop(row.SL), sd.stop(row.TP)
		if pending {
			r.TimeInForce, r.Expiration = row.TypeTime.String(), row.Expiration
		}
		r.Comment, r.Time, r.UpdateTime = row.Comment, row.TimeSetup, max(row.UpdateTime, op.UpdatedAt)
		if r.PositionID == 0 {
			r.PositionID = row.PositionID
		}
	}
	if r.Code == int(events.CodeUnavailable) && r.Msg == "" {
		r.Msg = "Service unavailable: the order was not queued to the trade server in time; nothing was executed."
	}
	if r.Code != 0 && r.Msg == "" {
		r.Msg = "The operation was rejected."
		if op.Status == trading.StatusInDoubt {
			r.Msg = "The execution status is unknown; retry only with the same newClientOrderId."
		}
	}
	return r
}
