package streams

import (
	"bytes"
	"encoding/json"
	"strconv"

	"tradesvc/events"
)

// Control methods a market-stream client may send.
const (
	methodSubscribe   = "SUBSCRIBE"
	methodUnsubscribe = "UNSUBSCRIBE"
	methodList        = "LIST_SUBSCRIPTIONS"
)

// control is a decoded control frame: {"method": ..., "params": [...], "id": n}.
type control struct {
	method string
	params []string
	id     uint64
}

// controlError is a refused control frame; hasID is false when the frame's id was missing or
// unusable (the reply then carries "id": null).
type controlError struct {
	code  events.Code
	msg   string
	id    uint64
	hasID bool
}

// parseControl decodes and checks one inbound frame, in the order of the spec's table: not a
// JSON object (-1130, id null); id missing or not an unsigned integer (-1102, id null);
// method missing or not a string (-1102); unknown method (-1020); params missing, empty or not
// an array of strings for SUBSCRIBE / UNSUBSCRIBE (-1102). Stream names are checked later.
func parseControl(frame []byte) (control, *controlError) {
	var fields map[string]json.RawMessage
	trimmed := bytes.TrimSpace(frame)
	if len(trimmed) == 0 || trimmed[0] != '{' || json.Unmarshal(trimmed, &fields) != nil {
		return control{}, &controlError{code: events.CodeInvalidData, msg: "Invalid request: the frame is not a JSON object."}
	}
	id, ok := parseID(fields["id"])
	if !ok {
		return control{}, &controlError{code: events.CodeMandatoryParam, msg: "Mandatory parameter 'id' is missing or not an unsigned integer."}
	}
	c := control{id: id}
	refuse := func(code events.Code, msg string) (control, *controlError) {
		return control{}, &controlError{code: code, msg: msg, id: id, hasID: true}
	}
	if json.Unmarshal(fields["method"], &c.method) != nil || isNull(fields["method"]) {
		return refuse(events.CodeMandatoryParam, "Mandatory parameter 'method' is missing or not a string.")
	}
	switch c.method {
	case methodSubscribe, methodUnsubscribe:
		raw := fields["params"]
		if isNull(raw) || json.Unmarshal(raw, &c.params) != nil || len(c.params) == 0 {
			return refuse(events.CodeMandatoryParam, "Mandatory parameter 'params' is missing, empty or not an array of stream names.")
		}
	case methodList:
	default:
		return refuse(events.CodeNotSupported, "Unknown method.")
	}
	return c, nil
}

// parseID accepts a JSON number that is an unsigned 64-bit integer, written without sign,
// fraction or exponent.
func parseID(raw json.RawMessage) (uint64, bool) {
	if len(raw) == 0 {
		return 0, false
	}
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	return n, err == nil
}

func isNull(raw json.RawMessage) bool { return len(raw) == 0 || string(raw) == "null" }

// resultFrame is a success reply: {"result": result, "id": id} (result nil renders null).
func resultFrame(id uint64, result []string) []byte {
	b := []byte(`{"result":`)
	if result == nil {
		b = append(b, "null"...)
	} else {
		names, _ := json.Marshal(result) // strings always encode
		b = append(b, names...)
	}
	b = append(b, `,"id":`...)
	b = strconv.AppendUint(b, id, 10)
	return append(b, '}')
}

// errorFrame is an error reply: {"code": code, "msg": msg, "id": id or null}. Error frames
// never close the connection by themselves.
func errorFrame(e *controlError) []byte {
	b := []byte(`{"code":`)
	b = strconv.AppendInt(b, int64(e.code), 10)
	b = append(b, `,"msg":`...)
	msg, _ := json.Marshal(e.msg)
	b = append(b, msg...)
	b = append(b, `,"id":`...)
	if e.hasID {
		b = strconv.AppendUint(b, e.id, 10)
	} else {
		b = append(b, "null"...)
	}
	return append(b, '}')
}

// rejectionError turns a rejection raised while checking stream names into a reply.
func rejectionError(err error, id uint64, hasID bool) *controlError {
	if rej, ok := err.(*events.Rejection); ok {
		return &controlError{code: rej.Code, msg: rej.Msg, id: id, hasID: hasID}
	}
	return &controlError{code: events.CodeInternal, msg: "Internal error; try again.", id: id, hasID: hasID}
}
