package projections

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// notifyPayloads are the payloads notifySQL sends for rows, numbered already (their last is
// the partition's head).
func notifyPayloads(part int32, rows []changeRow) []string {
	head := rows[len(rows)-1].seq
	var out []string
	for _, t := range notifyTails(rows) {
		out = append(out, fmt.Sprintf(`{"p":%d,"t":%d%s`, part, head-t.back, t.rest))
	}
	return out
}

func TestPeekNotifyReadsTheHeadOfEveryPayload(t *testing.T) {
	rows := []changeRow{{seq: 41, login: 1001, kind: "DEAL", event: []byte(`{"x":1}`)},
		{seq: 42, login: 1001, kind: "OPERATION", operationID: "op", event: []byte(`{"y":2}`)}}
	big := changeRow{seq: 43, login: 1001, kind: "DEAL", event: []byte(`"` + strings.Repeat("z", maxNotifyPayload) + `"`)}
	for _, payload := range notifyPayloads(7, append(rows, big)) {
		var full notifyPayload
		if err := json.Unmarshal([]byte(payload), &full); err != nil {
			t.Fatal(err)
		}
		part, to, ok := peekNotify(payload)
		if !ok || part != full.Part || to != full.To {
			t.Errorf("peek %q: %d %d %v, decoded %d %d", payload[:min(len(payload), 40)], part, to, ok, full.Part, full.To)
		}
	}
	for _, foreign := range []string{"", "{}", `{"t":1,"p":2}`, `{"p":"x","t":1}`, `{"p":1,"t":}`} {
		if _, _, ok := peekNotify(foreign); ok {
			t.Errorf("peek %q: ok", foreign)
		}
	}
}
