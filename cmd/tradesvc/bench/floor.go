package bench

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"tradesvc/gateway/gwclient"
)

// Floor is the least an order can cost, measured in the same run with the service's own
// settings: one HTTPS keep-alive round trip, the two chained Kafka produce-and-consume hops
// an order takes (command → executor, outcome → projection), and one synchronous Postgres
// commit (FloorParts). Each part's samples are taken back to back; Paced, when measured,
// takes them again one every GapMs, as the load spaces its orders.
type Floor struct {
	FloorParts
	Paced *PacedFloor `json:"paced,omitempty"`
}

// FloorParts are the floor's three parts; Total is the sum of their medians.
type FloorParts struct {
	HTTPS    Summary `json:"https"`
	Kafka2   Summary `json:"kafka2Hops"`
	PGCommit Summary `json:"pgCommit"`
	TotalMs  float64 `json:"totalP50Ms"`
}

// PacedFloor is the floor with its samples spaced as the load's orders are (one every GapMs):
// on a machine whose processes sleep between orders, each round trip then starts by waking
// them, which a back-to-back sample never pays. It is reported beside the floor; the answer's
// ratio is over the floor (Floor.TotalMs).
type PacedFloor struct {
	GapMs float64 `json:"gapMs"`
	FloorParts
}

// floorPaceMax is the widest gap of a paced floor (a load slower than 20 orders/s is not paced).
const floorPaceMax = 50 * time.Millisecond

// floor measures the floor back to back and, when gap is positive, paced one sample every gap.
func (r *runner) floor(ctx context.Context, gap time.Duration) (*Floor, error) {
	parts, err := r.floorParts(ctx, 0)
	if err != nil {
		return nil, err
	}
	f := &Floor{FloorParts: parts}
	if gap > 0 {
		paced, err := r.floorParts(ctx, gap)
		if err != nil {
			return nil, fmt.Errorf("paced: %w", err)
		}
		f.Paced = &PacedFloor{GapMs: roundMs(float64(gap) / float64(time.Millisecond)), FloorParts: paced}
	}
	return f, nil
}

// floorParts times the floor's three parts, each sample gap after the previous one ended.
func (r *runner) floorParts(ctx context.Context, gap time.Duration) (FloorParts, error) {
	id := r.id // the paced hops' records and groups are their own: a group reading topic A anew sees both
	if gap > 0 {
		id += "-paced"
	}
	var f FloorParts
	var err error
	if f.HTTPS, err = r.floorHTTPS(ctx, gap); err != nil {
		return f, fmt.Errorf("HTTPS round trip: %w", err)
	}
	if f.Kafka2, err = floorKafka(ctx, r.env.Kafka, id, r.o.FloorSamples, gap); err != nil {
		return f, fmt.Errorf("Kafka hops: %w", err)
	}
	if f.PGCommit, err = floorPostgres(ctx, r.env.PGURL, id, r.o.FloorSamples, gap); err != nil {
		return f, fmt.Errorf("Postgres commit: %w", err)
	}
	f.TotalMs = roundMs(f.HTTPS.P50 + f.Kafka2.P50 + f.PGCommit.P50)
	return f, nil
}

// floorGap is the gap of the paced floor: the load's interval between orders, for loads
// between 1/floorPaceMax and 2,000 orders/s (faster, the processes never sleep between them).
func floorGap(rate float64) time.Duration {
	if rate <= 0 {
		return 0
	}
	gap := time.Duration(float64(time.Second) / rate)
	if gap > floorPaceMax || gap < 500*time.Microsecond {
		return 0
	}
	return gap
}

// pause waits gap (none when it is zero) or until ctx ends.
func pause(ctx context.Context, gap time.Duration) error {
	if gap <= 0 {
		return nil
	}
	t := time.NewTimer(gap)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// floorHTTPS times GET /v1/ping on the load's own keep-alive client, one at a time.
func (r *runner) floorHTTPS(ctx context.Context, gap time.Duration) (Summary, error) {
	c := &gwclient.Client{BaseURL: r.env.BaseURL, HTTP: r.hc}
	lat := make([]time.Duration, 0, r.o.FloorSamples)
	for i := -10; i < r.o.FloorSamples; i++ { // the first ones warm the connection
		if err := pause(ctx, gap); err != nil {
			return Summary{}, err
		}
		t0 := time.Now()
		res, err := c.Public(ctx, http.MethodGet, "/v1/ping", nil)
		d := time.Since(t0)
		if err != nil {
			return Summary{}, err
		}
		if res.Status != http.StatusOK {
			return Summary{}, fmt.Errorf("GET /v1/ping answered HTTP %d", res.Status)
		}
		if i >= 0 {
			lat = append(lat, d)
		}
	}
	return Summarize(lat), nil
}

// floorTable is the scratch table of the commit floor, in the service's database.
const floorTable = "public.tradesvc_bench_floor"

// floorPostgres times one small INSERT in its own transaction with synchronous commit on
// the service's database (what the command side's idempotency record costs at least), and
// removes its rows afterwards.
func floorPostgres(ctx context.Context, pgURL, runID string, n int, gap time.Duration) (Summary, error) {
	cfg, err := pgx.ParseConfig(pgURL)
	if err != nil {
		return Summary{}, err
	}
	cfg.RuntimeParams["synchronous_commit"] = "on"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return Summary{}, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+floorTable+
		` (id bigserial PRIMARY KEY, run text NOT NULL, at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return Summary{}, err
	}
	defer conn.Exec(context.Background(), `DELETE FROM `+floorTable+` WHERE run = $1`, runID) //nolint:errcheck // best effort
	lat := make([]time.Duration, 0, n)
	for i := -10; i < n; i++ {
		if err := pause(ctx, gap); err != nil {
			return Summary{}, err
		}
		t0 := time.Now()
		if _, err := conn.Exec(ctx, `INSERT INTO `+floorTable+` (run) VALUES ($1)`, runID); err != nil {
			return Summary{}, err
		}
		if i >= 0 {
			lat = append(lat, time.Since(t0))
		}
	}
	return Summarize(lat), nil
}

func roundMs(v float64) float64 { return float64(int64(v*1000+0.5)) / 1000 }
