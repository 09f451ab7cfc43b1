package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	json "github.com/goccy/go-json"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/check"
	"tradesvc/infra/kafka/batch"
)

// ExecutionQualityName is the consumer group of the ClickHouse execution-quality projection.
const ExecutionQualityName = "projection.clickhouse.execution"

// ExecutionQuality writes execution_quality, one row per operation the executor sends: what
// was asked, against which quote, what the trade server answered, what filled at which price
// and slippage, and when each step happened (docs/analytics.md). It reads the three trading
// topics; a row is rewritten whole, versioned, whenever a fact about its operation arrives
// (execution_state.go), so a fill that completes hours after the answer updates it.
//
// Batches are applied one at a time (each reads the rows it touches and writes their new
// versions): the commands, executions and trades of one operation are consumed concurrently
// and must not overwrite each other's merge.
type ExecutionQuality struct {
	clickhouseTables
	ref *execReference
	log *slog.Logger
	now func() time.Time

	mu    sync.Mutex
	cache execCache // the rows this process read or wrote last, checked against the store's versions
}

// NewExecutionQuality builds the projection: rows go to conn, reference data (symbols'
// tick values, accounts' currencies) comes from the reference read models on refPool.
func NewExecutionQuality(conn driver.Conn, refPool *pgxpool.Pool, log *slog.Logger) (*ExecutionQuality, error) {
	var errs check.Problems
	errs.If(conn == nil, "projections: execution quality needs a ClickHouse connection")
	errs.If(refPool == nil, "projections: execution quality needs the reference read models' pool")
	if err := errs.Err(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	return &ExecutionQuality{clickhouseTables: clickhouseTables{conn}, ref: newExecReference(refPool), log: log, now: time.Now,
		cache: newExecCache(execCacheKeys)}, nil
}

// Topics the projection reads.
func (p *ExecutionQuality) Topics() []events.Topic {
	return []events.Topic{events.TopicCommands(), events.TopicExecutions(), events.TopicTrades()}
}

// Apply merges the batch's facts into the rows of their operations and writes the rows that
// changed, in one insert.
func (p *ExecutionQuality) Apply(ctx context.Context, msgs []batch.Message) error {
	// An orphan's command (trading_orphans.go) starts no row; its void outcome adds none.
	msgs, err := unrecorded(ctx, p.ref.pool, msgs, nil, p.now())
	if err != nil {
		return fmt.Errorf("execution quality: %w", err)
	}
	var facts []execFact
	for _, m := range msgs {
		facts = append(facts, execFacts(m)...)
	}
	if len(facts) == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var keys []execKey
	seen := map[execKey]bool{}
	for _, f := range facts {
		if !seen[f.key] {
			seen[f.key] = true
			keys = append(keys, f.key)
		}
	}
	stored, err := p.load(ctx, keys)
	if err != nil {
		return err
	}
	states := make(map[execKey]*execState, len(keys))
	for _, k := range keys {
		st := &execState{}
		if row, ok := stored[k]; ok {
			if err := json.Unmarshal([]byte(row.State), st); err != nil {
				return fmt.Errorf("execution quality: the stored state of %d/%s: %w", k.Login, k.Tag, err)
			}
		}
		states[k] = st
	}
	for _, f := range facts {
		f.merge(states[f.key])
	}
	var symbols []string
	var logins []int64
	for k, st := range states {
		logins = append(logins, k.Login)
		if st.Request != nil {
			symbols = append(symbols, st.Request.Symbol)
		}
	}
	if err := p.ref.load(ctx, symbols, logins, p.now()); err != nil {
		return err
	}
	var changed []execRow
	for _, k := range keys {
		st := states[k]
		symbol := ""
		if st.Request != nil {
			symbol = st.Request.Symbol
		}
		row, err := deriveRow(k, st, p.ref.get(symbol, k.Login))
		if err != nil {
			return err
		}
		row.Version = 1
		if old, ok := stored[k]; ok {
			if sameRow(old, row) {
				continue
			}
			row.Version = old.Version + 1
		}
		changed = append(changed, row)
	}
	if err := p.insert(ctx, changed); err != nil {
		return err
	}
	for _, r := range changed {
		p.cache.put(r)
	}
	return nil
}

// execLoadChunk bounds the keys of one read (the query text stays well under ClickHouse's
// 256 KiB limit).
const execLoadChunk = 500

// load reads the current rows of keys: the newest version of each. The store says which
// version is newest (execution_quality_versions: the sorting key and the version only, in
// small granules); a row this process read or wrote is taken from its cache when it is that
// version, and only the others are read whole. A version there is never older than the
// row's (insert writes it first), so a cached row of that version is the newest; one newer
// than any row (its row's insert failed) only costs a whole read. A whole row costs its
// granule's every column (the state alone is about half a kilobyte): with 150,000 rows in
// the table, a read of 500 keys took about 0.2 s of ClickHouse's time whole and about 0.02 s
// by versions (docs/benchmarks.md). Nothing is taken from memory that the store does not
// confirm, so a failed insert, another writer or a restart only costs reads.
func (p *ExecutionQuality) load(ctx context.Context, keys []execKey) (map[execKey]execRow, error) {
	out := make(map[execKey]execRow, len(keys))
	var whole []execKey
	for chunk := range slices.Chunk(keys, execLoadChunk) {
		where, want, err := execKeysWhere(chunk)
		if err != nil {
			return nil, err
		}
		rows, err := p.conn.Query(ctx, "SELECT login, tag, max(version) FROM execution_quality_versions WHERE "+where+
			" GROUP BY login, tag")
		if err != nil {
			return nil, fmt.Errorf("execution quality: read versions: %w", err)
		}
		for rows.Next() {
			var k execKey
			var version uint64
			if err := rows.Scan(&k.Login, &k.Tag, &version); err != nil {
				rows.Close()
				return nil, fmt.Errorf("execution quality: scan version: %w", err)
			}
			if !want[k] {
				continue
			}
			if r, ok := p.cache.get(k); ok && r.Version == version {
				out[k] = r
			} else {
				whole = append(whole, k)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("execution quality: read versions: %w", err)
		}
	}
	if len(whole) == 0 {
		return out, nil
	}
	cols := make([]string, len(execColumns))
	for i, c := range execColumns {
		cols[i] = c
		if execDecimalColumns[c] {
			cols[i] = "toString(" + c + ")"
		}
	}
	for chunk := range slices.Chunk(whole, execLoadChunk) {
		where, want, err := execKeysWhere(chunk)
		if err != nil {
			return nil, err
		}
		rows, err := p.conn.Query(ctx, "SELECT "+strings.Join(cols, ", ")+" FROM execution_quality FINAL WHERE "+where)
		if err != nil {
			return nil, fmt.Errorf("execution quality: read rows: %w", err)
		}
		for rows.Next() {
			var r execRow
			if err := rows.Scan(r.dests()...); err != nil {
				rows.Close()
				return nil, fmt.Errorf("execution quality: scan row: %w", err)
			}
			if k := (execKey{r.Login, r.Tag}); want[k] {
				out[k] = r
				p.cache.put(r)
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("execution quality: read rows: %w", err)
		}
	}
	return out, nil
}

// execKeysWhere is the condition that selects the rows of keys (and perhaps a few others: a
// row of one key's login and another's tag; want tells them apart). Tags are well-formed by
// construction ('#' and six base-62 digits) and logins are integers, so both lists are
// written literally: parameters are not bound by the driver on ClickHouse 18.16. Both
// columns are the table's sorting key, so the read is an index lookup.
func execKeysWhere(keys []execKey) (where string, want map[execKey]bool, err error) {
	want = make(map[execKey]bool, len(keys))
	listed := map[int64]bool{}
	var logins []string
	tags := make([]string, len(keys))
	for i, k := range keys {
		if trading.TagOf(k.Tag) != k.Tag {
			return "", nil, fmt.Errorf("execution quality: malformed tag %q", k.Tag)
		}
		tags[i] = "'" + k.Tag + "'"
		if !listed[k.Login] {
			listed[k.Login] = true
			logins = append(logins, strconv.FormatInt(k.Login, 10))
		}
		want[k] = true
	}
	return "login IN (" + strings.Join(logins, ", ") + ") AND tag IN (" + strings.Join(tags, ", ") + ")", want, nil
}

// execCacheKeys bounds the rows execCache keeps: two generations of at most this many keys
// (a row is about a kilobyte: some 150 MB when full). The facts of one operation arrive within
// seconds, but the projection may trail the log by tens of seconds under load, and a key
// evicted meanwhile costs a whole read (FINAL, every column): at 1,000 operations a second a
// generation of 16,384 keys lasted some 20 s, and once the projection trailed by more, those
// reads took ClickHouse from a tenth of a core to nearly half, which made it trail further
// (docs/benchmarks.md, nineteenth session). A fill hours later is read from the store.
const execCacheKeys = 65536

// execCache keeps the rows last read or written, by key, in two generations: a full current
// generation becomes the previous one and the one before is dropped, so the keys used last
// stay. It is used under the projection's lock.
type execCache struct {
	cur, prev map[execKey]execRow
	max       int
}

func newExecCache(max int) execCache {
	return execCache{cur: make(map[execKey]execRow), max: max}
}

func (c *execCache) get(k execKey) (execRow, bool) {
	if r, ok := c.cur[k]; ok {
		return r, true
	}
	r, ok := c.prev[k]
	if ok {
		c.put(r)
	}
	return r, ok
}

func (c *execCache) put(r execRow) {
	if len(c.cur) >= c.max {
		c.prev, c.cur = c.cur, make(map[execKey]execRow, c.max)
	}
	c.cur[execKey{r.Login, r.Tag}] = r
}

func (c *execCache) clear() {
	c.cur, c.prev = make(map[execKey]execRow), nil
}

// execDecimalColumns are read back as text (the driver's decimal type is not apd's).
var execDecimalColumns = map[string]bool{"requested_volume": true, "requested_price": true, "stop_limit_price": true,
	"quote_bid": true, "quote_ask": true, "arrival_price": true, "executed_volume": true, "fill_price": true,
	"slippage_points": true, "slippage": true}

// insert writes rows, their versions first (load): a failure between the two inserts leaves
// a version without its row, which the batch's retry reads past.
func (p *ExecutionQuality) insert(ctx context.Context, rows []execRow) error {
	if len(rows) == 0 {
		return nil
	}
	err := p.send(ctx, "execution_quality_versions (login, tag, version)", "versions", rows,
		func(r *execRow) []any { return []any{r.Login, r.Tag, r.Version} })
	if err != nil {
		return err
	}
	return p.send(ctx, "execution_quality ("+strings.Join(execColumns, ", ")+")", "rows", rows, (*execRow).values)
}

// send inserts one block into into (a table and its columns): values of each row.
func (p *ExecutionQuality) send(ctx context.Context, into, what string, rows []execRow, values func(*execRow) []any) error {
	b, err := p.conn.PrepareBatch(ctx, "INSERT INTO "+into)
	if err != nil {
		return fmt.Errorf("prepare execution quality %s insert: %w", what, err)
	}
	defer b.Abort()
	for i := range rows {
		if err := b.Append(values(&rows[i])...); err != nil {
			return fmt.Errorf("append execution quality %s of %d/%s: %w", what, rows[i].Login, rows[i].Tag, err)
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("insert %d execution quality %s: %w", len(rows), what, err)
	}
	return nil
}

// Reset empties the tables before a replay.
func (p *ExecutionQuality) Reset(ctx context.Context) error {
	p.mu.Lock()
	p.cache.clear()
	p.mu.Unlock()
	return truncate(ctx, p.conn, "execution_quality", "execution_quality_versions")
}

// Ping implements Pinger: ClickHouse and the reference read models answer.
func (p *ExecutionQuality) Ping(ctx context.Context) error {
	return errors.Join(p.conn.Ping(ctx), p.ref.pool.Ping(ctx))
}
