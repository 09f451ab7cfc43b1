package projections

import (
	"strconv"
	"strings"

	json "github.com/goccy/go-json"

	"github.com/jackc/pgx/v5"
)

// ChangesChannel is the channel the trading projection notifies after committing changes.
const ChangesChannel = "rm_changes"

// maxNotifyPayload keeps a NOTIFY payload under Postgres' 8000-byte limit.
const maxNotifyPayload = 7800

// notifyRow is one change row in a NOTIFY payload. Seq is left out by the writer: a
// payload's rows are a contiguous run ending at its To (rowSeq).
type notifyRow struct {
	Seq           int64           `json:"s,omitempty"`
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

// rowSeq is the number of the i-th of a payload's rows: its own when it carries one, else
// counted back from To.
func (p notifyPayload) rowSeq(i int) int64 {
	if s := p.Rows[i].Seq; s != 0 {
		return s
	}
	return p.To - int64(len(p.Rows)-1-i)
}

// notifyTail is a NOTIFY payload of a transaction's rows of one partition but for its head:
// the rows are numbered inside the transaction, so Postgres writes {"p":<part>,"t":<number>
// in front of rest, the number being the partition's head less back (notifySQL).
type notifyTail struct {
	back int64
	rest string
}

// notifyTails cuts a transaction's rows of one partition into payloads that fit, in order; a
// row that fits in no payload alone is announced by a payload without rows.
func notifyTails(rows []changeRow) []notifyTail {
	var out []notifyTail
	var cur []notifyRow
	size := 0
	flush := func(last int, withRows bool) {
		rest := "}"
		if withRows {
			b, _ := json.Marshal(cur) // rows of ints, strings and JSON encode
			rest = `,"r":` + string(b) + "}"
		}
		out = append(out, notifyTail{back: int64(len(rows) - 1 - last), rest: rest})
		cur, size = nil, 0
	}
	for i, r := range rows {
		nr := notifyRow{Login: r.login, Kind: r.kind, OperationID: r.operationID, APIKeyID: r.apiKeyID,
			ClientOrderID: r.clientOrderID, Event: r.event}
		n := len(r.event) + len(r.operationID) + len(r.clientOrderID) + len(r.kind) + 80
		if n > maxNotifyPayload {
			if len(cur) > 0 {
				flush(i-1, true)
			}
			flush(i, false)
			continue
		}
		if size+n > maxNotifyPayload {
			flush(i-1, true)
		}
		cur = append(cur, nr)
		size += n
	}
	if len(cur) > 0 {
		flush(len(rows)-1, true)
	}
	return out
}

// notifySQL sends a transaction's NOTIFYs of one partition ($1), in order, once its rows
// are numbered: the head it has just moved ends the last payload. Postgres delivers them at
// the commit, in commit order, and not at all when the transaction rolls back.
const notifySQL = `SELECT pg_notify('` + ChangesChannel + `', '{"p":' || $1::int::text || ',"t":' || (h.seq - x.back)::text || x.rest)
FROM rm.change_heads h CROSS JOIN unnest($2::bigint[], $3::text[]) WITH ORDINALITY AS x(back, rest, n)
WHERE h.part = $1 ORDER BY x.n`

// queueNotify queues the NOTIFYs of rows, the transaction's rows of part (queued before).
func queueNotify(b *pgx.Batch, part int32, rows []changeRow) {
	tails := notifyTails(rows)
	backs, rests := make([]int64, len(tails)), make([]string, len(tails))
	for i, t := range tails {
		backs[i], rests[i] = t.back, t.rest
	}
	b.Queue(notifySQL, part, backs, rests)
}

// peekNotify reads the partition and the last row number of a payload from its head
// ({"p":<part>,"t":<to>, as notifySQL writes it) without decoding its rows; ok is false
// for any other text.
func peekNotify(payload string) (part int32, to int64, ok bool) {
	rest, ok := strings.CutPrefix(payload, `{"p":`)
	if !ok {
		return 0, 0, false
	}
	p, rest, ok := strings.Cut(rest, `,"t":`)
	if !ok {
		return 0, 0, false
	}
	end := strings.IndexAny(rest, ",}")
	if end < 0 {
		return 0, 0, false
	}
	pn, err1 := strconv.ParseInt(p, 10, 32)
	tn, err2 := strconv.ParseInt(rest[:end], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return int32(pn), tn, true
}
