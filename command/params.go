package command

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
)

// Params is how a command reads its request's parameters by name: the gateway's decoded
// query and form body, or one item of a batch. Values are strings as sent.
type Params interface {
	Get(name string) (string, bool)
}

// MapParams are the parameters of one batch item.
type MapParams map[string]string

// Get implements Params.
func (m MapParams) Get(name string) (string, bool) {
	v, ok := m[name]
	return v, ok
}

// Response types of POST /v1/order, POST /v1/batchOrders and DELETE /v1/position.
const (
	RespACK    = "ACK"
	RespRESULT = "RESULT"
)

// Limits of the spec ("Request and parameter limits").
const (
	MaxClientOrderIDLen = 36
	MaxCommentLen       = 24
)

func errMandatory(name string) *events.Rejection {
	return events.Reject(events.CodeMandatoryParam, "Mandatory parameter '"+name+"' was not sent, was empty/null, or malformed.")
}

func errInvalid(name string) *events.Rejection {
	return events.Reject(events.CodeInvalidData, "Invalid value for parameter '"+name+"'.")
}

// optional returns the value of name and whether it was sent non-empty.
func optional(p Params, name string) (string, bool) {
	v, ok := p.Get(name)
	return v, ok && v != ""
}

// required returns the non-empty value of name, or -1102.
func required(p Params, name string) (string, error) {
	v, ok := optional(p, name)
	if !ok {
		return "", errMandatory(name)
	}
	return v, nil
}

// clientOrderID reads newClientOrderId: empty is -1118; over 36 characters or outside
// letters, digits, '-', '_', '.' is -1119; absent generates one (given is then false).
func clientOrderID(p Params, name string) (id string, given bool, err error) {
	v, sent := p.Get(name)
	if !sent {
		return newClientOrderID(), false, nil
	}
	if v == "" {
		return "", true, events.Reject(events.CodeEmptyNewClientOrderID, "Parameter '"+name+"' is empty.")
	}
	if len(v) > MaxClientOrderIDLen {
		return "", true, events.Reject(events.CodeBadClientOrderID, "Parameter '"+name+"' is longer than 36 characters.")
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", true, events.Reject(events.CodeBadClientOrderID,
				"Parameter '"+name+"' may hold only letters, digits, '-', '_' and '.'.")
		}
	}
	return v, true, nil
}

// respType reads newOrderRespType: ACK (default) or RESULT, anything else -1130.
func respType(p Params) (string, error) {
	v, ok := p.Get("newOrderRespType")
	switch {
	case !ok || v == RespACK:
		return RespACK, nil
	case v == RespRESULT:
		return RespRESULT, nil
	}
	return "", events.Reject(events.CodeInvalidData, "Invalid newOrderRespType: must be ACK or RESULT.")
}

// comment reads comment: at most 24 characters (-1130), stored with the correlation tag.
func comment(p Params) (string, error) {
	v, _ := p.Get("comment")
	if utf8.RuneCountInString(v) > MaxCommentLen {
		return "", events.Reject(events.CodeInvalidData, "Parameter 'comment' is longer than 24 characters.")
	}
	return v, nil
}

// decimalParam parses an optional decimal; nil when absent, -1130 when malformed.
func decimalParam(p Params, name string) (*apd.Decimal, error) {
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

// int64Param parses an optional integer; nil when absent, -1130 when malformed.
func int64Param(p Params, name string) (*int64, error) {
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
func ticketParam(p Params, name string) (int64, error) {
	if _, ok := optional(p, name); !ok {
		return 0, errMandatory(name)
	}
	n, err := int64Param(p, name)
	if err != nil {
		return 0, err
	}
	return *n, nil
}
