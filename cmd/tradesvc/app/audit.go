package app

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/config"
	"tradesvc/infra/kafka"
	"tradesvc/projections"
	"tradesvc/projections/audit"
)

// AuditResult is the stories `tradesvc audit` tells and what it could show beside the log.
type AuditResult struct {
	Stories []audit.Story
	// PositionsFrom says where the trading projection's positions (the "applied" column)
	// were read from; empty when they could not be read.
	PositionsFrom string
	// PositionsError says why they could not be.
	PositionsError string
	// ReadModel: Postgres answered and each story carries its rm.operations row.
	ReadModel bool
}

// Audit reads the log for the operations q names and tells their stories. It needs Kafka
// only; when Postgres answers within a few seconds it also shows each operation's row in the
// trading read model, and marks each step applied or not by the positions the trading
// projection stored (from its consumer group when the read models keep none).
func Audit(ctx context.Context, cfg config.Config, q audit.Query) (AuditResult, error) {
	var res AuditResult
	kcfg := kafka.Config{Brokers: cfg.KafkaBrokers, TopicPrefix: cfg.TopicPrefix, ClientID: "tradesvc-audit"}
	l, err := audit.OpenLog(cfg.KafkaBrokers, cfg.TopicPrefix, kcfg.ConsumerConfig())
	if err != nil {
		return res, err
	}
	defer l.Close()
	ids, records, err := audit.Find(ctx, l, q)
	if err != nil {
		return res, err
	}
	pool := reachablePostgres(ctx, cfg.PGURL)
	if pool != nil {
		defer pool.Close()
	}
	src := projections.Source{Brokers: cfg.KafkaBrokers, TopicPrefix: cfg.TopicPrefix, Sarama: kcfg.ConsumerConfig()}
	var stored projections.PositionsQuerier // nil without Postgres: the consumer group's offsets
	if pool != nil {
		stored = pool
	}
	pos, from, err := projections.StoredPositions(ctx, src, stored, projections.TradingName, (&projections.Trading{}).Topics())
	if err != nil {
		res.PositionsError, pos = err.Error(), nil
	}
	res.PositionsFrom = from
	res.Stories = audit.Build(ids, records, pos)
	if pool != nil {
		res.ReadModel = true
		for i := range res.Stories {
			if res.Stories[i].ReadModel, err = readModelRow(ctx, pool, res.Stories[i].OperationID); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

// reachablePostgres opens the read-model database when it answers within 3 s, else nil:
// an audit works from the log alone.
func reachablePostgres(ctx context.Context, url string) *pgxpool.Pool {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil
	}
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil
	}
	return pool
}

func readModelRow(ctx context.Context, pool *pgxpool.Pool, id string) (*audit.ReadModelRow, error) {
	var r audit.ReadModelRow
	err := pool.QueryRow(ctx, `SELECT status, coalesce(executed_volume::text, ''), version, updated_at
		FROM rm.operations WHERE operation_id = $1`, id).Scan(&r.Status, &r.ExecutedVolume, &r.Version, &r.UpdatedAt)
	if err == pgx.ErrNoRows {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read model of %s: %w", id, err)
	}
	return &r, nil
}
