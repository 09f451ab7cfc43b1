package gateway

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/command"
	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
)

// The decoders of the trading endpoints: request parameters become typed commands here, and
// only here. Each parameter's own rules answer the spec's -11xx codes (and the value rules
// that need nothing but the value: -4001 for a price below zero, -4003 for a volume of zero,
// -4012 for an expiration in the past); the rules that need a read model are the command
// handlers'. POST /v1/order and every item of POST /v1/batchOrders share decodeOrder.

// paramGetter reads a request's parameters by name: the query and form body, or one item of
// a batch (itemParams).
type paramGetter interface {
	Get(name string) (string, bool)
}

// itemParams are the parameters of one batch item.
type itemParams map[string]string

func (m itemParams) Get(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// Response types of POST /v1/order, POST /v1/batchOrders and DELETE /v1/position.
const (
	respACK    = "ACK"
	respRESULT = "RESULT"
)

// optional returns the value of name and whether it was sent non-empty.
func optional(p paramGetter, name string) (string, bool) {
	v, ok := p.Get(name)
	return v, ok && v != ""
}

// required returns the non-empty value of name, or -1102.
func required(p paramGetter, name string) (string, error) {
	v, ok := optional(p, name)
	if !ok {
		return "", errMandatory(name)
	}
	return v, nil
}

// decimalParam parses an optional decimal; nil when absent, -1130 when malformed.
func decimalParam(p paramGetter, name string) (*apd.Decimal, error) {
	v, ok := optional(p, name)
	if !ok {
		return nil, nil
	}
	d, err := dec.Parse(v)
	if err != nil {
		return nil, errInvalid(name)
	}
	return &d, nil
}

// positiveParam parses an optional price that must be above zero (-4001).
func positiveParam(p paramGetter, name, what string) (*apd.Decimal, error) {
	d, err := decimalParam(p, name)
	if err != nil || d == nil {
		return d, err
	}
	if d.Sign() <= 0 {
		return nil, events.Reject(events.CodePriceNegative, what+" must be greater than 0.")
	}
	return d, nil
}

// int64Param parses an optional integer; nil when absent, -1130 when malformed.
func int64Param(p paramGetter, name string) (*int64, error) {
	v, ok := optional(p, name)
	if !ok {
		return nil, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || strings.TrimSpace(v) != v {
		return nil, errInvalid(name)
	}
	return &n, nil
}

// ticketParam reads a mandatory ticket (orderId, positionId): -1102 missing, -1130 malformed.
func ticketParam(p paramGetter, name string) (int64, error) {
	n, err := int64Param(p, name)
	if err == nil && n == nil {
		err = errMandatory(name)
	}
	if err != nil {
		return 0, err
	}
	return *n, nil
}

// clientID reads newClientOrderId: empty is -1118; over 36 characters or outside letters,
// digits, '-', '_', '.' is -1119; absent generates one (Given is then false).
func clientID(p paramGetter) (command.ClientID, error) {
	const name = "newClientOrderId"
	v, sent := p.Get(name)
	if !sent {
		return command.ClientID{ID: command.NewClientOrderID()}, nil
	}
	id := command.ClientID{ID: v, Given: true}
	if v == "" {
		return id, events.Reject(events.CodeEmptyNewClientOrderID, "Parameter '"+name+"' is empty.")
	}
	if len(v) > command.MaxClientOrderIDLen {
		return id, events.Reject(events.CodeBadClientOrderID, "Parameter '"+name+"' is longer than 36 characters.")
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return id, events.Reject(events.CodeBadClientOrderID,
				"Parameter '"+name+"' may hold only letters, digits, '-', '_' and '.'.")
		}
	}
	return id, nil
}

// respType reads newOrderRespType: ACK (default) or RESULT, anything else -1130.
func respType(p paramGetter) (string, error) {
	v, ok := p.Get("newOrderRespType")
	switch {
	case !ok || v == respACK:
		return respACK, nil
	case v == respRESULT:
		return respRESULT, nil
	}
	return "", events.Reject(events.CodeInvalidData, "Invalid newOrderRespType: must be ACK or RESULT.")
}

// stops reads sl and tp: malformed -1130, negative -4001; zero (or absent) is none (nil).
// sent reports which were sent non-empty (a modification keeps the others).
func stops(p paramGetter) (sl, tp command.Stop, err error) {
	read := func(name string) (command.Stop, error) {
		_, sent := optional(p, name)
		d, err := decimalParam(p, name)
		if err != nil || d == nil {
			return command.Stop{Sent: sent}, err
		}
		if d.Sign() < 0 {
			return command.Stop{}, events.Reject(events.CodePriceNegative, "Parameter '"+name+"' must not be negative.")
		}
		if d.IsZero() {
			d = nil
		}
		return command.Stop{Sent: sent, Value: d}, nil
	}
	if sl, err = read("sl"); err != nil {
		return sl, tp, err
	}
	tp, err = read("tp")
	return sl, tp, err
}

// decodeOrder reads a new order in the spec's order: comment, symbol, type and side, volume,
// price and stop-limit price, stops, time in force and expiration.
func decodeOrder(p paramGetter, now time.Time) (command.OrderRequest, error) {
	var o command.OrderRequest
	var err error
	o.Comment, _ = p.Get("comment")
	if utf8.RuneCountInString(o.Comment) > command.MaxCommentLen {
		return o, events.Reject(events.CodeInvalidData, "Parameter 'comment' is longer than 24 characters.")
	}
	if !validValue(o.Comment) {
		// The parameter parser's rule (params.go); a batch item's comment is a JSON string,
		// whose escapes (\u0000) get past the parser. A platform comment cannot hold them
		// anyway (a NUL, for one, no Postgres text or jsonb column stores).
		return o, errIllegalValue("comment")
	}
	if o.Symbol, err = required(p, "symbol"); err != nil {
		return o, err
	}
	if o.Type, err = orderType(p); err != nil {
		return o, err
	}
	vol, err := required(p, "volume")
	if err != nil {
		return o, err
	}
	if o.Volume, err = dec.Parse(vol); err != nil {
		return o, errInvalid("volume")
	}
	if o.Volume.Sign() <= 0 {
		return o, events.Reject(events.CodeVolumeNotPositive, "Volume must be greater than 0.")
	}
	pending := o.Type.IsPending()
	if pending {
		if _, ok := optional(p, "price"); !ok {
			return o, errMandatory("price")
		}
		if o.Price, err = positiveParam(p, "price", "Price"); err != nil {
			return o, err
		}
	}
	if o.Type.IsStopLimit() {
		if _, ok := optional(p, "stopLimitPrice"); !ok {
			return o, errMandatory("stopLimitPrice")
		}
		if o.StopLimitPrice, err = positiveParam(p, "stopLimitPrice", "Stop-limit price"); err != nil {
			return o, err
		}
	} else if _, sent := p.Get("stopLimitPrice"); sent {
		return o, events.Reject(events.CodeParamNotRequired, "Parameter 'stopLimitPrice' is only for stop-limit orders.")
	}
	sl, tp, err := stops(p)
	if err != nil {
		return o, err
	}
	o.SL, o.TP = sl.Value, tp.Value
	if o.TimeInForce, o.Expiration, err = orderExpiration(p, pending, now); err != nil {
		return o, err
	}
	return o, nil
}

// orderType reads type and side: type missing -1102, not sendable -1116; side not BUY or
// SELL -1117, missing on a MARKET order -1102, disagreeing with a pending type -1117.
func orderType(p paramGetter) (trading.OrderType, error) {
	name, err := required(p, "type")
	if err != nil {
		return 0, err
	}
	pending := trading.IsPendingName(name)
	if name != trading.TypeMarket && !pending {
		return 0, events.Reject(events.CodeInvalidOrderType, "Invalid order type.")
	}
	sideName, sideSent := optional(p, "side")
	side, sideOK := trading.ParseSide(sideName)
	switch {
	case sideSent && !sideOK:
		return 0, events.Reject(events.CodeInvalidSide, "Invalid side.")
	case !pending && !sideSent:
		return 0, errMandatory("side")
	}
	t, _ := trading.ParseSendable(name, side)
	if pending && sideSent && t.Side() != side {
		return 0, events.Reject(events.CodeInvalidSide, "Side disagrees with the order type.")
	}
	return t, nil
}

// orderExpiration reads timeInForce and expiration: on MARKET -1106; unknown -1115; GTD and
// GTD_DAY need an expiration (-1102) that is positive and, for GTD, in the future (-4012).
func orderExpiration(p paramGetter, pending bool, now time.Time) (trading.TimeType, int64, error) {
	name, sent := p.Get("timeInForce")
	if !pending {
		if sent {
			return 0, 0, events.Reject(events.CodeParamNotRequired, "Parameter 'timeInForce' is not taken by MARKET orders.")
		}
		return trading.TimeGTC, 0, nil
	}
	tif := trading.TimeGTC
	if sent && name != "" {
		var ok bool
		if tif, ok = trading.ParseTimeInForce(name); !ok {
			return 0, 0, errInvalidTIF
		}
	}
	if !tif.NeedsExpiration() {
		return tif, 0, nil
	}
	if _, ok := optional(p, "expiration"); !ok {
		return 0, 0, errMandatory("expiration")
	}
	exp, err := int64Param(p, "expiration")
	if err != nil {
		return 0, 0, err
	}
	if *exp <= 0 || (tif == trading.TimeSpecified && *exp <= now.UnixMilli()) {
		return 0, 0, events.Reject(events.CodeInvalidExpiration, "Invalid expiration.")
	}
	return tif, *exp, nil
}

var errInvalidTIF = events.Reject(events.CodeInvalidTIF, "Invalid timeInForce.")

// decodeOrderRef reads orderId or origClientOrderId: neither -1102, a malformed orderId -1130.
func decodeOrderRef(p paramGetter) (command.OrderRef, error) {
	id, err := int64Param(p, "orderId")
	if err != nil {
		return command.OrderRef{}, err
	}
	orig, byClient := optional(p, "origClientOrderId")
	if id == nil && !byClient {
		return command.OrderRef{}, events.Reject(events.CodeMandatoryParam,
			"Mandatory parameter 'orderId' or 'origClientOrderId' was not sent, was empty/null, or malformed.")
	}
	return command.OrderRef{OrderID: id, OrigClientOrderID: orig}, nil
}

// decodePlaceOrder reads POST /v1/order (decodeOrder).
func decodePlaceOrder(b command.Base, r *Request) (command.PlaceOrder, error) {
	o, err := decodeOrder(r.Params, r.Now)
	return command.PlaceOrder{Base: b, Order: o}, err
}

// decodeCancelOrder reads DELETE /v1/order: the order (decodeOrderRef).
func decodeCancelOrder(b command.Base, r *Request) (command.CancelOrder, error) {
	ref, err := decodeOrderRef(r.Params)
	return command.CancelOrder{Base: b, Target: ref}, err
}

// decodeModifyOrder reads PUT /v1/order: the order, then the new values (a value not sent
// keeps the order's).
func decodeModifyOrder(b command.Base, r *Request) (command.ModifyOrder, error) {
	p, cmd := r.Params, command.ModifyOrder{Base: b}
	var err error
	if cmd.Target, err = decodeOrderRef(p); err != nil {
		return cmd, err
	}
	if cmd.Price, err = positiveParam(p, "price", "Price"); err != nil {
		return cmd, err
	}
	if _, sent := p.Get("stopLimitPrice"); sent {
		cmd.StopLimitPrice.Sent = true
		if cmd.StopLimitPrice.Value, err = decimalParam(p, "stopLimitPrice"); err != nil {
			return cmd, err
		}
	}
	if cmd.SL, cmd.TP, err = stops(p); err != nil {
		return cmd, err
	}
	if name, ok := optional(p, "timeInForce"); ok {
		tif, known := trading.ParseTimeInForce(name)
		if !known {
			return cmd, errInvalidTIF
		}
		cmd.TimeInForce = &tif
	}
	cmd.Expiration, err = int64Param(p, "expiration")
	return cmd, err
}

// decodeClosePosition reads DELETE /v1/position: volume (> 0, -4003) and positionId.
func decodeClosePosition(b command.Base, r *Request) (command.ClosePosition, error) {
	p, cmd := r.Params, command.ClosePosition{Base: b}
	var err error
	if cmd.Volume, err = decimalParam(p, "volume"); err != nil {
		return cmd, err
	}
	if cmd.Volume != nil && cmd.Volume.Sign() <= 0 {
		return cmd, events.Reject(events.CodeVolumeNotPositive, "Volume must be greater than 0.")
	}
	cmd.PositionID, err = ticketParam(p, "positionId")
	return cmd, err
}

// decodeModifyPosition reads PUT /v1/position: sl and/or tp (neither: -1102), positionId.
func decodeModifyPosition(b command.Base, r *Request) (command.ModifyPosition, error) {
	p, cmd := r.Params, command.ModifyPosition{Base: b}
	var err error
	if cmd.SL, cmd.TP, err = stops(p); err != nil {
		return cmd, err
	}
	if !cmd.SL.Sent && !cmd.TP.Sent {
		return cmd, events.Reject(events.CodeMandatoryParam, "Mandatory parameter 'sl' or 'tp' was not sent, was empty/null, or malformed.")
	}
	cmd.PositionID, err = ticketParam(p, "positionId")
	return cmd, err
}

var (
	errBatchMalformed = events.Reject(events.CodeInvalidData, "Parameter 'batchOrders' must be a JSON array of order objects.")
	errBatchSize      = events.Reject(events.CodeBatchSize, "Batch must hold 1 to 100 orders.")
	errBatchDuplicate = events.Reject(events.CodeDuplicateInBatch, "Duplicate newClientOrderId in the batch.")
)

// decodeBatch reads batchOrders: a JSON array of 1 to 100 objects whose values are strings or
// numbers (decimals are sent as strings; integers like login and expiration may be numbers),
// with no newClientOrderId twice. Not an array or nested values -1130, size -1131, a
// duplicate -1132.
func decodeBatch(p paramGetter) ([]itemParams, error) {
	raw, ok := optional(p, "batchOrders")
	if !ok {
		return nil, errMandatory("batchOrders")
	}
	d := json.NewDecoder(bytes.NewReader([]byte(raw)))
	d.UseNumber()
	var items []map[string]any
	if err := d.Decode(&items); err != nil || d.More() {
		return nil, errBatchMalformed
	}
	if len(items) == 0 || len(items) > command.MaxBatchItems {
		return nil, errBatchSize
	}
	out := make([]itemParams, len(items))
	seen := map[string]bool{}
	for i, it := range items {
		if it == nil {
			return nil, errBatchMalformed
		}
		m := make(itemParams, len(it))
		for k, v := range it {
			switch x := v.(type) {
			case string:
				m[k] = x
			case json.Number:
				m[k] = x.String()
			default:
				return nil, errBatchMalformed
			}
		}
		out[i] = m
	}
	for _, it := range out {
		if id := it["newClientOrderId"]; id != "" {
			if seen[id] {
				return nil, errBatchDuplicate
			}
			seen[id] = true
		}
	}
	return out, nil
}
