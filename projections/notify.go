package projections

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/group"
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

// peekNotify reads the partition and the last row number of a payload from its head
// ({"p":<part>,"t":<to>, as notifyPayloads writes it) without decoding its rows; ok is false
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

// newNotifier sends the NOTIFYs of committed transactions in commit order, off the path of
// the next transaction: the group commit would otherwise wait a round trip per transaction for
// them. What is handed in while a send is under way goes out together in the next one.
func newNotifier(pool *pgxpool.Pool, log *slog.Logger) *group.Drain[string] {
	return group.NewDrain(func(payloads []string) {
		b := &pgx.Batch{}
		for _, p := range payloads {
			b.Queue("SELECT pg_notify($1, $2)", ChangesChannel, p)
		}
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		defer cancel()
		if err := pool.SendBatch(ctx, b).Close(); err != nil {
			log.Warn("trading projection: notify the change feed", "payloads", len(payloads), "err", err)
		}
	})
}

// notifyTimeout bounds one send of NOTIFYs.
const notifyTimeout = 10 * time.Second
