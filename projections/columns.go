package projections

import (
	"fmt"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events/dec"
)

// parseColumns parses decimal columns read as text (Postgres numeric::text, ClickHouse
// toString) into their destinations, pairwise: no float is ever in between.
func parseColumns(texts []string, dsts ...*apd.Decimal) error {
	if len(texts) != len(dsts) {
		return fmt.Errorf("parseColumns: %d texts for %d destinations", len(texts), len(dsts))
	}
	for i, s := range texts {
		d, err := dec.Parse(s)
		if err != nil {
			return fmt.Errorf("column %d: %w", i+1, err)
		}
		*dsts[i] = d
	}
	return nil
}
