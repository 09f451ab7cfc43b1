package streams

import (
	"strings"
	"testing"
	"time"
)

// The write window grows with the open connections between Coalesce and CoalesceMax, and a
// negative Coalesce turns it off.
func TestPacerWindowGrowsWithOpenConnectionsWithinItsBounds(t *testing.T) {
	cfg := Config{}.WithDefaults()
	p := newPacer(&cfg)
	for _, c := range []struct {
		open int64
		want time.Duration
	}{
		{0, 2 * time.Millisecond},
		{10, 2 * time.Millisecond},      // 0.4 ms: the least window
		{100, 4 * time.Millisecond},     // 100 × 40 µs
		{1000, 40 * time.Millisecond},   // 1000 × 40 µs
		{10_000, 50 * time.Millisecond}, // the most
	} {
		p.open.Store(c.open)
		if got := p.window(); got != c.want {
			t.Errorf("%d open: window %v, want %v", c.open, got, c.want)
		}
	}
	off := Config{Coalesce: -1}.WithDefaults()
	p = newPacer(&off)
	p.open.Store(1000)
	if got := p.window(); got != 0 {
		t.Errorf("Coalesce < 0: window %v, want 0", got)
	}
	if got := (*pacer)(nil).window(); got != 0 {
		t.Errorf("no pacer: window %v, want 0", got)
	}
}

func TestConfigRefusesAnInvertedCoalesceRange(t *testing.T) {
	err := Config{Coalesce: 80 * time.Millisecond, CoalescePerConn: -time.Microsecond}.WithDefaults().Validate()
	if err == nil || !strings.Contains(err.Error(), "CoalesceMax") || !strings.Contains(err.Error(), "CoalescePerConn") {
		t.Fatalf("want both coalesce errors, got %v", err)
	}
}
