package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/wait"
)

// Positions are the log positions a Postgres projection applied (rm.projection_offsets:
// per topic and partition, the offset after the last message applied), written in the same
// transaction as the projection's writes. A crash at any moment (the projector's, Postgres')
// therefore leaves the read models and the positions they stand at together: the next
// session starts from there (batch.Config.Positions seeks every claimed partition to it), so
// nothing is lost and nothing is applied twice. Kafka's committed offsets are only a mirror.
//
// Each transaction checks that the store holds the position this process last wrote or read
// and moves it forward in one statement; when it does not (a commit that failed after all
// took effect, another consumer of the same partition), the transaction is rolled back and
// the batch ends with batch.ErrResume: the session starts again from what the store says,
// never from memory. A position this process no longer knows (after a failed transaction) is
// read in the transaction, and one found below what this process had committed is the same
// case.
//
// A writer may commit asynchronously (the trading projection: postgres.Config.AsyncCommit),
// and then a crash of Postgres takes back its last commits, positions with writes, as a
// suffix of them (the write-ahead log is written in order): the store stands where it stood
// some commits earlier, consistent with itself, and nothing taken back is lost as long as the
// writer applies it again from the log. It does: a transaction on a partition whose position
// went back fails its check (above), and Watch finds a partition that went back while no
// batch came, and ends the session (Rewound); a new session starts from the store and forgets
// what the writer remembered of its commits (OnLoad).
type Positions struct {
	pool *pgxpool.Pool
	name string

	mu   sync.Mutex
	next map[topicPartition]int64 // what this process last read or wrote; absent: unknown
	// held: partitions whose messages past next were all copies of what was applied already
	// (they changed nothing, so no transaction moved the position over them), since when.
	held map[topicPartition]time.Time
	// floor: partitions this process no longer knows (forget, after a failed transaction),
	// and the position it knew: the store never stands below it unless it took commits back.
	floor map[topicPartition]int64
	// rewinding: partitions Watch found behind, until a session loads them again.
	rewinding map[topicPartition]bool
	rewound   chan struct{} // closed when Watch finds the store behind next or floor (then replaced)
	onLoad    func()
}

type topicPartition struct {
	topic     string
	partition int32
}

// NewPositions keeps the positions of projection name.
func NewPositions(pool *pgxpool.Pool, name string) *Positions {
	return &Positions{pool: pool, name: name, next: map[topicPartition]int64{}, held: map[topicPartition]time.Time{},
		floor: map[topicPartition]int64{}, rewinding: map[topicPartition]bool{}, rewound: make(chan struct{})}
}

// OnLoad sets what Load calls first, at every consumer session's start: what the writer
// remembers of its commits must be forgotten there (the store may have taken them back).
func (p *Positions) OnLoad(fn func()) { p.onLoad = fn }

// Rewound implements batch.Rewinding: the channel is closed when Watch finds the store
// behind a position this process committed.
func (p *Positions) Rewound() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rewound
}

// Watch checks every interval that the store still holds the positions this process
// committed, until ctx ends. One found behind (Postgres took back the last asynchronous
// commits) is forgotten and the session is ended (Rewound), so that the next one applies
// again from the store what was taken back, whether or not more messages come to its
// partition.
func (p *Positions) Watch(ctx context.Context, interval time.Duration, log *slog.Logger) {
	wait.Every(ctx, interval, func() {
		// An error (Postgres away) is left to the next check: the batches fail meanwhile too.
		if behind, err := p.check(ctx); err == nil && len(behind) > 0 {
			log.Warn("the store took back positions this projection committed (Postgres restarted?); applying again from the store",
				"partitions", behind)
		}
	})
}

// check compares the stored positions with those this process committed, and rewinds the
// ones found behind. The store is read after memory, so a commit that lands between the two
// only puts the store further ahead: a stored position behind is one the store lost.
func (p *Positions) check(ctx context.Context) ([]string, error) {
	p.mu.Lock()
	mine := maps.Clone(p.floor)
	maps.Copy(mine, p.next)
	for tp := range p.rewinding {
		delete(mine, tp)
	}
	p.mu.Unlock()
	if len(mine) == 0 {
		return nil, nil
	}
	stored, err := tableOffsets(ctx, p.pool, p.name)
	if err != nil {
		return nil, err
	}
	var behind []topicPartition
	for tp, n := range mine {
		if s, ok := stored[TopicPartition{tp.topic, tp.partition}]; n >= 0 && (!ok || s < n) {
			behind = append(behind, tp)
		}
	}
	if len(behind) == 0 {
		return nil, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, len(behind))
	for i, tp := range behind {
		// Until the next session loads it, a batch of this one that reads the position finds
		// it below the floor, and ends the session itself.
		p.floor[tp] = mine[tp]
		p.rewinding[tp] = true
		delete(p.next, tp)
		delete(p.held, tp)
		names[i] = fmt.Sprintf("%s/%d", tp.topic, tp.partition)
	}
	close(p.rewound)
	p.rewound = make(chan struct{})
	return names, nil
}

// Load implements batch.Positions (a session's start) and remembers what it read.
func (p *Positions) Load(ctx context.Context, topic string, partitions []int32) (map[int32]int64, error) {
	if p.onLoad != nil {
		p.onLoad()
	}
	rows, err := p.pool.Query(ctx, `SELECT partition, next_offset FROM rm.projection_offsets
		WHERE projection = $1 AND topic = $2 AND partition = ANY($3)`, p.name, topic, partitions)
	if err != nil {
		return nil, fmt.Errorf("load positions of %s on %s: %w", p.name, topic, err)
	}
	out, err := collectPairs[int32, int64](rows)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, part := range partitions {
		tp := topicPartition{topic, part}
		delete(p.held, tp)
		delete(p.floor, tp)
		delete(p.rewinding, tp)
		if next, ok := out[part]; ok {
			p.next[tp] = next
		} else {
			p.next[tp] = -1 // nothing applied yet
		}
	}
	return out, nil
}

// knownPast returns the messages of msgs past the positions this process knows; ok is false
// when a partition's position is unknown (it is read in the transaction, plan).
func (p *Positions) knownPast(msgs []batch.Message) (kept []batch.Message, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept = msgs[:0:0]
	for _, m := range msgs {
		if m.Topic == "" {
			kept = append(kept, m)
			continue
		}
		next, known := p.next[topicPartition{m.Topic, m.Partition}]
		if !known {
			return nil, false
		}
		if m.Offset >= next {
			kept = append(kept, m)
		}
	}
	return kept, true
}

// nextOf returns where tp stands as this process knows it (known is false when it does not:
// never loaded, forgotten, or found behind by Watch).
func (p *Positions) nextOf(tp topicPartition) (next int64, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rewinding[tp] {
		return 0, false
	}
	next, known = p.next[tp]
	return next, known
}

// passed reports whether the message at offset of topic's partition is behind where that
// partition stands as this process knows it (applied already); false for p nil (a replay).
func (p *Positions) passed(topic string, partition int32, offset int64) bool {
	if p == nil || topic == "" {
		return false
	}
	next, known := p.nextOf(topicPartition{topic, partition})
	return known && offset < next
}

// maxHeld bounds how long a position may stay behind messages that changed nothing.
const maxHeld = time.Second

// hold leaves the positions of msgs where they are stored, the messages all being copies of
// what was applied already; it reports false (write the positions now) when one of their
// partitions has been held longer than maxHeld. A crash meanwhile costs nothing: the next
// session reads those copies again, and they change nothing again (every statement moves its
// row only forward). The next transaction that touches a partition moves its position over
// them (plan: from the stored position to its own last message).
func (p *Positions) hold(msgs []batch.Message, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range msgs {
		if since, ok := p.held[topicPartition{m.Topic, m.Partition}]; ok && now.Sub(since) > maxHeld {
			return false
		}
	}
	for _, m := range msgs {
		tp := topicPartition{m.Topic, m.Partition}
		if _, ok := p.held[tp]; !ok && m.Topic != "" {
			p.held[tp] = now
		}
	}
	return true
}

// advance is what one transaction moves: per topic and partition, from the position it
// expects to the offset after its last message.
type advance struct {
	topics     []string
	partitions []int32
	expected   []int64 // -1: no position stored yet
	next       []int64
	held       int // rows the check-and-advance statement touched
}

// errPositionsMoved is why a transaction was rolled back: the store is not where this
// process left it.
var errPositionsMoved = errors.New("projections: the stored positions are not where this projector left them")

// plan keeps the messages past the positions this process knows and the advance they make.
// Messages without a topic (not read from the log: a replay tool, a test) are kept and move
// nothing. A partition whose position this process does not know is read first, in tx.
func (p *Positions) plan(ctx context.Context, tx querier, msgs []batch.Message) ([]batch.Message, *advance, error) {
	last := map[topicPartition]int64{}
	var order []topicPartition
	for _, m := range msgs {
		if m.Topic == "" {
			continue
		}
		tp := topicPartition{m.Topic, m.Partition}
		if _, ok := last[tp]; !ok {
			order = append(order, tp)
		}
		last[tp] = max(last[tp], m.Offset)
	}
	known, err := p.known(ctx, tx, order)
	if err != nil {
		return nil, nil, err
	}
	kept := msgs[:0:0]
	for _, m := range msgs {
		if m.Topic == "" || m.Offset >= known[topicPartition{m.Topic, m.Partition}] {
			kept = append(kept, m)
		}
	}
	adv := &advance{}
	for _, tp := range order {
		from := known[tp]
		if last[tp] < from {
			continue // already applied (a redelivery)
		}
		adv.topics, adv.partitions = append(adv.topics, tp.topic), append(adv.partitions, tp.partition)
		adv.expected, adv.next = append(adv.expected, from), append(adv.next, last[tp]+1)
	}
	return kept, adv, nil
}

// known returns where each partition stands: from memory, or read in tx. A position read
// below the floor this process knew (it committed that far) was taken back by the store
// (Postgres lost its last commits): errPositionsMoved, so that the session starts again from
// the store rather than go on past what was taken back.
func (p *Positions) known(ctx context.Context, tx querier, tps []topicPartition) (map[topicPartition]int64, error) {
	out := make(map[topicPartition]int64, len(tps))
	var unknown []topicPartition
	var floors map[topicPartition]int64 // of the unknown ones, rarely any
	p.mu.Lock()
	for _, tp := range tps {
		if next, ok := p.next[tp]; ok {
			out[tp] = next
		} else {
			unknown = append(unknown, tp)
			if f, ok := p.floor[tp]; ok {
				if floors == nil {
					floors = map[topicPartition]int64{}
				}
				floors[tp] = f
			}
		}
	}
	p.mu.Unlock()
	if len(unknown) == 0 {
		return out, nil
	}
	topics, parts := make([]string, len(unknown)), make([]int32, len(unknown))
	for i, tp := range unknown {
		topics[i], parts[i] = tp.topic, tp.partition
		out[tp] = -1
	}
	rows, err := tx.Query(ctx, `SELECT o.topic, o.partition, o.next_offset FROM rm.projection_offsets o
		JOIN unnest($2::text[], $3::int[]) AS x(topic, partition) USING (topic, partition)
		WHERE o.projection = $1 FOR UPDATE OF o`, p.name, topics, parts)
	if err != nil {
		return nil, fmt.Errorf("read positions of %s: %w", p.name, err)
	}
	for rows.Next() {
		var tp topicPartition
		var next int64
		if err := rows.Scan(&tp.topic, &tp.partition, &next); err != nil {
			rows.Close()
			return nil, err
		}
		out[tp] = next
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for tp, f := range floors {
		if out[tp] < f {
			return nil, fmt.Errorf("%w (%s/%d stored at %d, this process had committed up to %d)", errPositionsMoved,
				tp.topic, tp.partition, out[tp], f)
		}
	}
	return out, nil
}

// queue adds the check-and-advance statement to b: it moves each position that stands where
// expected, and inserts the ones expected absent; adv.held counts what it touched. An advance
// of one stored position (a transaction of one partition's batch: every RESULT at low load)
// is a keyed UPDATE, half the set-wise statement's time in Postgres; an advance of several is
// the set-wise statement, which costs a sixth of a keyed UPDATE per partition at 24.
//
// fenced: the statement itself fails the transaction (SQLSTATE fencePositions) when a position
// is not where expected, for a transaction that commits in the same pipeline (the check after
// the pipeline would come too late).
func (p *Positions) queue(b *pgx.Batch, adv *advance, fenced bool) {
	if len(adv.topics) == 0 {
		return
	}
	if len(adv.topics) == 1 && adv.expected[0] != -1 {
		const update = `UPDATE rm.projection_offsets SET next_offset = $5, updated_at = now()
			WHERE projection = $1 AND topic = $2 AND partition = $3 AND next_offset = $4`
		args := []any{p.name, adv.topics[0], adv.partitions[0], adv.expected[0], adv.next[0]}
		if fenced {
			b.Queue(`WITH moved AS (`+update+` RETURNING 1)
				SELECT `+fencedHeld("count(*) = 1")+` FROM moved`,
				args...).Exec(func(pgconn.CommandTag) error {
				adv.held = 1
				return nil
			})
			return
		}
		b.Queue(update, args...).Exec(func(ct pgconn.CommandTag) error {
			adv.held = int(ct.RowsAffected())
			return nil
		})
		return
	}
	const advance = `WITH x AS (SELECT * FROM unnest($2::text[], $3::int[], $4::bigint[], $5::bigint[])
			AS x(topic, partition, expected, next)),
		moved AS (UPDATE rm.projection_offsets o SET next_offset = x.next, updated_at = now() FROM x
			WHERE o.projection = $1 AND o.topic = x.topic AND o.partition = x.partition
			AND o.next_offset = x.expected RETURNING 1),
		fresh AS (INSERT INTO rm.projection_offsets (projection, topic, partition, next_offset)
			SELECT $1, x.topic, x.partition, x.next FROM x WHERE x.expected = -1
			ON CONFLICT DO NOTHING RETURNING 1),
		held AS (SELECT (SELECT count(*) FROM moved) + (SELECT count(*) FROM fresh) AS n)`
	args := []any{p.name, adv.topics, adv.partitions, adv.expected, adv.next}
	if fenced {
		b.Queue(advance+`
		SELECT `+fencedHeld("n = $6")+` FROM held`,
			append(args, len(adv.topics))...).Exec(func(pgconn.CommandTag) error {
			adv.held = len(adv.topics)
			return nil
		})
		return
	}
	b.Queue(advance+` SELECT n FROM held`, args...).QueryRow(func(row pgx.Row) error {
		return row.Scan(&adv.held)
	})
}

// fencePositions is the SQLSTATE of a fenced check-and-advance that found a position elsewhere
// than expected (queue): the transaction fails as errPositionsMoved.
const fencePositions = "TSP01"

// fencedHeld is the fence of a check-and-advance: it fails unless held (an SQL condition on
// what the statement moved) is true.
func fencedHeld(held string) string {
	return `rm.fence(` + held + `, '` + fencePositions + `', 'the stored positions are not where this projector left them')`
}

// check fails when the statement did not find the store where the advance expected it.
func (adv *advance) check() error {
	if adv.held != len(adv.topics) {
		return fmt.Errorf("%w (%d of %d partitions where expected)", errPositionsMoved, adv.held, len(adv.topics))
	}
	return nil
}

// committed remembers an advance whose transaction committed.
func (p *Positions) committed(adv *advance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, topic := range adv.topics {
		tp := topicPartition{topic, adv.partitions[i]}
		p.next[tp] = adv.next[i]
		delete(p.held, tp)
		delete(p.floor, tp)
	}
}

// forget drops what this process believes of the advance's partitions: after a failed or
// uncertain commit the next session reads them from the store.
func (p *Positions) forget(adv *advance) {
	if adv == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, topic := range adv.topics {
		tp := topicPartition{topic, adv.partitions[i]}
		if next, ok := p.next[tp]; ok {
			p.floor[tp] = next
		}
		delete(p.next, tp)
		delete(p.held, tp)
	}
}

// failed turns the failure of a transaction that carried adv into what the consumer does:
// a store elsewhere than expected, or a commit whose outcome is unknown, resumes from the
// store (batch.ErrResume); other failures are retried as they are, after the positions this
// process believed are forgotten (the retry reads them in its transaction).
func (p *Positions) failed(adv *advance, err error) error {
	if errors.Is(err, batch.ErrRetrySoon) {
		return err // rolled back on purpose: the positions stand where this process believes
	}
	p.forget(adv)
	if errors.Is(err, errPositionsMoved) || isCommitUncertain(err) {
		return fmt.Errorf("%w: %w", batch.ErrResume, err)
	}
	return err
}

// isCommitUncertain reports whether err may have come after the commit reached Postgres
// (the connection broke while committing): the transaction may have taken effect.
func isCommitUncertain(err error) bool {
	var ce *commitError
	return errors.As(err, &ce)
}

// commitError marks a failure of the COMMIT itself.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }
