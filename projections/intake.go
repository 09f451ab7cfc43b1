package projections

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/IBM/sarama"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
)

// The service's intake is what brings a login's changes to the change feed: the relay (the
// trade server's facts into the log) and the trading projection (the log into the read models
// and rm.changes). Each reports where it stands in rm.intake about once a second
// (ReportIntake); a gateway's change feed reads the reports with its poll and ends the
// subscriptions of the logins whose intake has lagged for longer than its bound
// (ChangeFeedConfig.MaxLag): a user stream is closed with 1011 rather than left silent.

// Intake sources.
const (
	// IntakeTrading is the trading projection, one report per partition of the trading
	// topics it consumes.
	IntakeTrading = TradingName
	// IntakeRelay is the relay of the trade server's facts, one report for every partition.
	IntakeRelay = "relay"
)

// AllPartitions is the partition of a report that covers every partition.
const AllPartitions int32 = -1

// IntakeReportEvery is how often the components report (their reports are stale after
// intakeStale).
const IntakeReportEvery = time.Second

// intakeStale: a report older than this is from a component that stopped reporting (killed,
// stopped, cut off from Postgres); its partitions count as lagging since that report.
const intakeStale = 3 * IntakeReportEvery

// IntakePart is where a source stands on one partition.
type IntakePart struct {
	Part int32
	// Behind is how long the source has been behind on it; zero when caught up.
	Behind time.Duration
}

// ReportIntake records where source stands. Times are taken from the database's clock (less
// Behind), so gateways and components with skewed clocks agree.
func ReportIntake(ctx context.Context, pool *pgxpool.Pool, source string, parts []IntakePart) error {
	if len(parts) == 0 {
		return nil
	}
	ps, behind := make([]int32, len(parts)), make([]int64, len(parts))
	for i, p := range parts {
		ps[i], behind[i] = p.Part, p.Behind.Milliseconds()
		if p.Behind > 0 && behind[i] == 0 {
			behind[i] = 1
		}
	}
	_, err := pool.Exec(ctx, `INSERT INTO rm.intake AS i (source, part, behind_since, reported_at)
		SELECT $1, p, CASE WHEN b > 0 THEN now() - b * interval '1 millisecond' END, now()
		FROM unnest($2::int[], $3::bigint[]) AS x(p, b)
		ON CONFLICT (source, part) DO UPDATE SET behind_since = EXCLUDED.behind_since, reported_at = EXCLUDED.reported_at`,
		source, ps, behind)
	if err != nil {
		return fmt.Errorf("report intake of %s: %w", source, err)
	}
	return nil
}

// intakeLag is what a gateway knows of the intake: since when it lags, for every partition
// (all) and per partition (zero times: not lagging).
type intakeLag struct {
	all   time.Time
	parts map[int32]time.Time
}

// readIntake reads the reports and dates them on this process's clock: a source behind since
// a time, or silent since its last report when that is stale.
func readIntake(ctx context.Context, conn *pgx.Conn, now time.Time) (intakeLag, error) {
	rows, err := conn.Query(ctx, `SELECT part,
		coalesce((extract(epoch FROM now() - behind_since) * 1000)::bigint, -1),
		(extract(epoch FROM now() - reported_at) * 1000)::bigint
		FROM rm.intake`)
	if err != nil {
		return intakeLag{}, fmt.Errorf("read intake: %w", err)
	}
	defer rows.Close()
	lag := intakeLag{parts: map[int32]time.Time{}}
	for rows.Next() {
		var part int32
		var behindMs, reportedMs int64
		if err := rows.Scan(&part, &behindMs, &reportedMs); err != nil {
			return intakeLag{}, fmt.Errorf("read intake: %w", err)
		}
		var since time.Time
		if behindMs >= 0 {
			since = now.Add(-time.Duration(behindMs) * time.Millisecond)
		}
		if reported := time.Duration(reportedMs) * time.Millisecond; reported > intakeStale {
			since = earliest(since, now.Add(-reported))
		}
		if since.IsZero() {
			continue
		}
		if part == AllPartitions {
			lag.all = earliest(lag.all, since)
		} else {
			lag.parts[part] = earliest(lag.parts[part], since)
		}
	}
	return lag, rows.Err()
}

// earliest is the earlier of two times, a zero time counting as none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// loginPartition is the partition of the trading topics that holds login's events: the
// producer's hash of the key (every event of those topics is keyed by login).
func loginPartition(login int64) int32 {
	// A partitioner keeps a hash state: one per call (this runs only while intake lags).
	p, err := sarama.NewHashPartitioner("").Partition(&sarama.ProducerMessage{Key: sarama.StringEncoder(strconv.FormatInt(login, 10))},
		events.TopicTrades().Partitions)
	if err != nil {
		return AllPartitions // a hash partitioner does not fail on a key
	}
	return p
}
