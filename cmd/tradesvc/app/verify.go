package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/config"
	"tradesvc/infra/kafka"
	"tradesvc/infra/postgres"
	"tradesvc/infra/wait"
	"tradesvc/projections"
	"tradesvc/projections/verify"
)

// VerifyOptions tune `tradesvc replay --verify`.
type VerifyOptions struct {
	// ScratchURL is a database to rebuild into (migrated, its trading read models emptied
	// first); empty creates <database>_verify_<time> beside the live one and drops it after.
	ScratchURL string
	// KeepScratch leaves the created scratch database in place (to look at the rebuilt rows).
	KeepScratch bool
	// Settle is how long the consumer group's committed offsets must stand still around the
	// reading of the live read models (default 1.5 s: several auto-commit intervals).
	Settle time.Duration
	// Attempts bounds how often the live read models are read again while the projection
	// keeps applying (default 20).
	Attempts int
}

// VerifyReport is what `tradesvc replay --verify` prints.
type VerifyReport struct {
	Projection string `json:"projection"`
	// PositionsFrom says where the live projection's positions were read: its consumer
	// group's committed offsets, or rm.projection_offsets once the projection stores them.
	PositionsFrom string `json:"positionsFrom"`
	// Positions are the next offsets per "topic/partition" the rebuild stopped at.
	Positions     map[string]int64    `json:"positions"`
	EventsApplied int                 `json:"eventsApplied"`
	Tables        []VerifiedTable     `json:"tables"`
	Scratch       string              `json:"scratchDatabase"`
	Equal         bool                `json:"equal"`
	Differences   []verify.Difference `json:"differences"`
}

// VerifiedTable counts a table's rows on both sides.
type VerifiedTable struct {
	Table    string `json:"table"`
	Live     int    `json:"live"`
	Replayed int    `json:"replayed"`
}

// VerifyReplay rebuilds the trading read models (operations, orders, positions, deals,
// account balances) from the log into a scratch database, up to the positions the live
// projection has stored, and compares them with the live read models row for row, the
// columns that record how the live projection happened to apply a row left out. The live
// service may keep running: the live rows are read in one snapshot at positions that hold
// still around it (projections.StoredPositions says how exact that is).
func VerifyReplay(ctx context.Context, cfg config.Config, log *slog.Logger, opts VerifyOptions) (VerifyReport, error) {
	if opts.Settle <= 0 {
		opts.Settle = 1500 * time.Millisecond
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 20
	}
	rep := VerifyReport{Projection: projections.TradingName}
	live, err := postgres.Open(ctx, postgres.Config{URL: cfg.PGURL, MaxConns: 4})
	if err != nil {
		return rep, err
	}
	defer live.Close()
	kcfg := kafka.Config{Brokers: cfg.KafkaBrokers, TopicPrefix: cfg.TopicPrefix, ClientID: "tradesvc-verify"}
	// No dead-letter topic: a message the rebuild cannot apply stops it with its error
	// rather than being parked a second time.
	src := projections.Source{Brokers: cfg.KafkaBrokers, TopicPrefix: cfg.TopicPrefix, Sarama: kcfg.ConsumerConfig(),
		Logger: log.With("component", "replay verify")}
	pos, from, liveRows, err := liveSnapshot(ctx, src, live, opts)
	if err != nil {
		return rep, err
	}
	rep.PositionsFrom, rep.Positions = from, map[string]int64{}
	for _, tp := range pos.Sorted() {
		rep.Positions[tp.String()] = pos[tp]
	}
	scratchURL, drop, err := scratchDatabase(ctx, live, cfg.PGURL, opts)
	if err != nil {
		return rep, err
	}
	defer drop()
	rep.Scratch = scratchName(scratchURL)
	scratch, err := postgres.Open(ctx, postgres.Config{URL: scratchURL, MaxConns: 8})
	if err != nil {
		return rep, err
	}
	defer scratch.Close()
	if err := postgres.Migrate(ctx, scratch); err != nil {
		return rep, fmt.Errorf("migrate the scratch database: %w", err)
	}
	rebuilt, err := projections.NewTrading(projections.TradingConfig{Pool: scratch, Records: live, Replaying: true,
		Logger: log.With("projection", projections.TradingName, "component", "replay verify")})
	if err != nil {
		return rep, err
	}
	if err := rebuilt.Reset(ctx); err != nil {
		return rep, fmt.Errorf("empty the scratch read models: %w", err)
	}
	if err := copySymbols(ctx, live, scratch); err != nil {
		return rep, err
	}
	if rep.EventsApplied, err = projections.ReplayUpTo(ctx, src, projections.TradingName, rebuilt, pos); err != nil {
		return rep, err
	}
	replayed, err := verify.Snapshot(ctx, scratch, verify.TradingTables)
	if err != nil {
		return rep, err
	}
	for _, t := range verify.TradingTables {
		rep.Tables = append(rep.Tables, VerifiedTable{Table: t.Name, Live: len(liveRows[t.Name]), Replayed: len(replayed[t.Name])})
	}
	rep.Differences = verify.Compare(verify.TradingTables, liveRows, replayed)
	if rep.Differences == nil {
		rep.Differences = []verify.Difference{}
	}
	rep.Equal = len(rep.Differences) == 0
	return rep, nil
}

// liveSnapshot reads the live read models together with the positions they reflect. From
// rm.projection_offsets both come from one snapshot. From the consumer group, whose commits
// trail the read models' by up to an auto-commit interval, the group's offsets are read,
// then the rows, then the offsets again after Settle: equal, no batch was applied around the
// reading (its commit would have moved them); otherwise it tries again.
func liveSnapshot(ctx context.Context, src projections.Source, live *pgxpool.Pool, opts VerifyOptions) (
	projections.LogPositions, string, map[string]verify.Rows, error) {
	topics := (&projections.Trading{}).Topics() // a method of the type: it reads no state
	for attempt := 1; attempt <= opts.Attempts; attempt++ {
		var pos projections.LogPositions
		var from string
		var rows map[string]verify.Rows
		err := pgx.BeginTxFunc(ctx, live, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error {
				var err error
				if pos, from, err = projections.StoredPositions(ctx, src, tx, projections.TradingName, topics); err != nil {
					return err
				}
				if from == projections.PositionsFromTable {
					rows, err = verify.Snapshot(ctx, tx, verify.TradingTables)
				}
				return err
			})
		if err != nil {
			return nil, "", nil, err
		}
		if from == projections.PositionsFromTable {
			return pos, from, rows, nil
		}
		err = pgx.BeginTxFunc(ctx, live, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly},
			func(tx pgx.Tx) error {
				var err error
				rows, err = verify.Snapshot(ctx, tx, verify.TradingTables)
				return err
			})
		if err != nil {
			return nil, "", nil, err
		}
		if err := wait.For(ctx, opts.Settle); err != nil {
			return nil, "", nil, err
		}
		again, _, err := projections.StoredPositions(ctx, src, nil, projections.TradingName, topics)
		if err != nil {
			return nil, "", nil, err
		}
		if again.Equal(pos) {
			return pos, from, rows, nil
		}
	}
	return nil, "", nil, fmt.Errorf("the live trading projection kept applying events through %d readings; verify when it is quieter", opts.Attempts)
}

// scratchDatabase is the database to rebuild into, and what removes it afterwards.
func scratchDatabase(ctx context.Context, live *pgxpool.Pool, liveURL string, opts VerifyOptions) (string, func(), error) {
	if opts.ScratchURL != "" {
		return opts.ScratchURL, func() {}, nil
	}
	u, err := url.Parse(liveURL)
	if err != nil {
		return "", nil, fmt.Errorf("the Postgres URL: %w", err)
	}
	base := strings.TrimPrefix(u.Path, "/")
	if base == "" {
		base = "tradesvc"
	}
	name := fmt.Sprintf("%s_verify_%d", base, time.Now().UnixNano())
	if _, err := live.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, fmt.Errorf("create the scratch database %s (or pass --scratch-url): %w", name, err)
	}
	u.Path = "/" + name
	drop := func() {
		if opts.KeepScratch {
			return
		}
		// A fresh context: the verification's may have ended, the database must go anyway.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = live.Exec(dctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	}
	return u.String(), drop, nil
}

func scratchName(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return strings.TrimPrefix(p.Path, "/")
}

// copySymbols gives the scratch database the live symbol specifications: the trading
// projection formats averaged prices and frames with their digits, as the live one did.
func copySymbols(ctx context.Context, live, scratch *pgxpool.Pool) error {
	rows, err := live.Query(ctx, `SELECT symbol, spec::text, spec_time FROM rm.symbols`)
	if err != nil {
		return fmt.Errorf("read the live symbols: %w", err)
	}
	type sym struct {
		name, spec string
		time       int64
	}
	syms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sym, error) {
		var s sym
		err := r.Scan(&s.name, &s.spec, &s.time)
		return s, err
	})
	if err != nil {
		return fmt.Errorf("read the live symbols: %w", err)
	}
	b := &pgx.Batch{}
	for _, s := range syms {
		b.Queue(`INSERT INTO rm.symbols (symbol, spec, spec_time) VALUES ($1, $2::jsonb, $3)
			ON CONFLICT (symbol) DO UPDATE SET spec = EXCLUDED.spec, spec_time = EXCLUDED.spec_time`, s.name, s.spec, s.time)
	}
	if err := scratch.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("copy the symbols into the scratch database: %w", err)
	}
	return nil
}

// ErrNotEqual is returned by the command when the rebuilt read models differ from the live ones.
var ErrNotEqual = errors.New("the replayed read models differ from the live ones")
