package projections

import (
	"encoding/json"
	"strconv"
)

// ChangesChannel is the channel the trading projection notifies after committing changes.
const ChangesChannel = "rm_changes"

// maxNotifyPayload keeps a NOTIFY payload under Postgres' 8000-byte limit.
const maxNotifyPayload = 7800

// notifyRow is one change row in a NOTIFY payload.
type notifyRow struct {
	Seq           int64           `json:"s"`
	Login         int64           `json:"l"`
	Kind          string          `json:"k"`
	OperationID   string          `json:"o,omitempty"`
	APIKeyID      int64           `json:"a,omitempty"`
	ClientOrderID string          `json:"c,omitempty"`
	Event         json.RawMessage `json:"e"`
}

// notifyPayload is what a NOTIFY on ChangesChannel says: partition Part committed rows up to
// To; Rows are those rows (a contiguous run ending at To) when they fit, else empty (read
// them by query).
type notifyPayload struct {
	Part int32       `json:"p"`
	To   int64       `json:"t"`
	Rows []notifyRow `json:"r,omitempty"`
}

// notifyPayloads cuts a transaction's rows into payloads that fit, in order; a row that
// fits in no payload alone is announced by a payload without rows.
func notifyPayloads(part int32, rows []changeRow) []string {
	var out []string
	var cur []notifyRow
	size := 0
	flush := func(to int64, withRows bool) {
		p := notifyPayload{Part: part, To: to}
		if withRows {
			p.Rows = cur
		}
		b, _ := json.Marshal(p) // rows of ints, strings and JSON encode
		out = append(out, string(b))
		cur, size = nil, 0
	}
	for _, r := range rows {
		nr := notifyRow{Seq: r.seq, Login: r.login, Kind: r.kind, OperationID: r.operationID, APIKeyID: r.apiKeyID,
			ClientOrderID: r.clientOrderID, Event: r.event}
		n := len(r.event) + len(r.operationID) + len(r.clientOrderID) + len(r.kind) + 80 + len(strconv.FormatInt(r.seq, 10))
		if n > maxNotifyPayload {
			if len(cur) > 0 {
				flush(cur[len(cur)-1].Seq, true)
			}
			flush(r.seq, false)
			continue
		}
		if size+n > maxNotifyPayload {
			flush(cur[len(cur)-1].Seq, true)
		}
		cur = append(cur, nr)
		size += n
	}
	if len(cur) > 0 {
		flush(cur[len(cur)-1].Seq, true)
	}
	return out
}
