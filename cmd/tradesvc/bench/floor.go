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
// commit. Total is the sum of the three medians.
type Floor struct {
	HTTPS    Summary `json:"https"`
	Kafka2   Summary `json:"kafka2Hops"`
	PGCommit Summary `json:"pgCommit"`
	TotalMs  float64 `json:"totalP50Ms"`
}

func (r *runner) floor(ctx context.Context) (*Floor, error) {
	var f Floor
	var err error
	if f.HTTPS, err = r.floorHTTPS(ctx); err != nil {
		return nil, fmt.Errorf("HTTPS round trip: %w", err)
	}
	if f.Kafka2, err = floorKafka(ctx, r.env.Kafka, r.id, r.o.FloorSamples); err != nil {
		return nil, fmt.Errorf("Kafka hops: %w", err)
	}
	if f.PGCommit, err = floorPostgres(ctx, r.env.PGURL, r.id, r.o.FloorSamples); err != nil {
		return nil, fmt.Errorf("Postgres commit: %w", err)
	}
	f.TotalMs = roundMs(f.HTTPS.P50 + f.Kafka2.P50 + f.PGCommit.P50)
	return &f, nil
}

// floorHTTPS times GET /v1/ping on the load's own keep-alive client, one at a time.
func (r *runner) floorHTTPS(ctx context.Context) (Summary, error) {
	c := &gwclient.Client{BaseURL: r.env.BaseURL, HTTP: r.hc}
	lat := make([]time.Duration, 0, r.o.FloorSamples)
	for i := -10; i < r.o.FloorSamples; i++ { // the first ones warm the connection
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
func floorPostgres(ctx context.Context, pgURL, runID string, n int) (Summary, error) {
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
