package relay

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
)

// fingerprint identifies the content of values, to publish reference data only when it
// changed. Values holding apd.Decimal must be passed as pointers (apd marshals through a
// pointer receiver).
func fingerprint(vs ...any) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return fmt.Sprintf("unencodable:%v", err) // never equal to a real fingerprint
		}
	}
	return string(h.Sum(nil))
}
