package gateway

import (
	"encoding/json"
	"strconv"

	"tradesvc/events"
)

// Typed parameter readers. Each answers the spec's code: a missing or empty mandatory
// parameter is -1102, an unparseable or out-of-range value -1130.

func errMandatory(name string) error {
	return events.Reject(events.CodeMandatoryParam, "Mandatory parameter '"+name+"' was not sent, was empty/null, or malformed.")
}

func errInvalid(name string) error {
	return events.Reject(events.CodeInvalidData, "Invalid value for parameter '"+name+"'.")
}

// Required returns the non-empty value of name or -1102.
func (p *Params) Required(name string) (string, error) {
	v, ok := p.Get(name)
	if !ok || v == "" {
		return "", errMandatory(name)
	}
	return v, nil
}

// Optional returns the value of name; empty when not sent or sent empty.
func (p *Params) Optional(name string) string {
	v, _ := p.Get(name)
	return v
}

// OptionalInt64 parses name as an int64 when sent (non-empty); nil when absent.
func (p *Params) OptionalInt64(name string) (*int64, error) {
	v, ok := p.Get(name)
	if !ok || v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, errInvalid(name)
	}
	return &n, nil
}

// OptionalIntRange parses name as an int within lo..hi; 0 when absent; -1130 otherwise.
func (p *Params) OptionalIntRange(name string, lo, hi int) (int, error) {
	v, ok := p.Get(name)
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, events.Reject(events.CodeInvalidData, "Invalid value for parameter '"+name+"': must be "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi)+".")
	}
	return n, nil
}

// Login reads the mandatory login: missing or empty -1102, not an int64 -1122.
func (p *Params) Login() (int64, error) {
	v, err := p.Required("login")
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil {
		return 0, events.Reject(events.CodeInvalidLogin, "Invalid login.")
	}
	return n, nil
}

// ItemCount returns the number of items of a JSON-array parameter (batchOrders), or 0 when
// it is absent or not a JSON array. Weight and ORDERS functions of batch endpoints use it;
// the handler itself still answers -1130 / -1131 for a malformed or oversized batch.
func (p *Params) ItemCount(name string) int {
	v := p.Optional(name)
	if v == "" {
		return 0
	}
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(v), &items); err != nil {
		return 0
	}
	return len(items)
}
