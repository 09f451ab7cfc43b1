package command

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	json "github.com/goccy/go-json"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/group"
	"tradesvc/infra/postgres"
)

// Record is an idempotency record (cmd.idempotency): what the first request under a client
// order id started, so that a retry can be answered from it and finish its work.
type Record struct {
	APIKeyID      int64
	ClientOrderID string
	Kind          trading.Kind
	Login         int64
	OperationID   string
	Tag           string
	Attempt       int
	// Envelopes are the command events of the current attempt, exactly as appended (or as
	// the append was attempted): a retry re-appends them unchanged.
	Envelopes []events.Envelope
	// Response is kind-specific data the answer needs (none of today's kinds has any).
	Response json.RawMessage
	// Claim, when set, is the executor's claim of the operation's attempt, which the insert
	// stores in the same statement as the record (EarlyClaim); it is not part of the record.
	Claim *EarlyClaim
}

func (r *Record) key() recordKey { return recordKey{r.APIKeyID, r.ClientOrderID} }

// commands decodes the record's command events.
func (r *Record) commands() ([]events.Command, error) {
	out := make([]events.Command, 0, len(r.Envelopes))
	for _, env := range r.Envelopes {
		ev, err := events.Decode(env)
		if err != nil {
			return nil, fmt.Errorf("decode stored command of %s: %w", r.ClientOrderID, err)
		}
		cmd, ok := ev.(events.Command)
		if !ok {
			return nil, fmt.Errorf("idempotency record %q holds %s, not a command", r.ClientOrderID, env.Type)
		}
		out = append(out, cmd)
	}
	return out, nil
}

// command decodes the operation's own command event (the first; a sweep's legs follow it).
func (r *Record) command() (events.Command, error) {
	if len(r.Envelopes) == 0 {
		return nil, fmt.Errorf("idempotency record %q holds no command", r.ClientOrderID)
	}
	cmds, err := r.commands()
	if err != nil {
		return nil, err
	}
	return cmds[0], nil
}

// Records stores idempotency records in Postgres. A record binds a client order id to one
// operation before its command is appended: a retry finds it and never runs a second one.
// The record of a single command is committed asynchronously (asyncCommit), that of a sweep
// synchronously. A record lives Retention (the spec's "at
// least 24 hours"); after that its client order id is treated as new.
type Records struct {
	pool      *pgxpool.Pool
	retention time.Duration
	analyzer  *postgres.Analyzer // keeps cmd.idempotency's statistics current while it is young
	group     *group.Group[Record, bool]
	lookups   *group.Group[recordKey, bool] // Exists
}

// The commit of an insert round. A record is visible to every other request, and its
// uniqueness enforced, as soon as its insert returns, whether or not the commit waited for the
// disk; what an asynchronous commit risks is only the record itself, should Postgres crash
// within the moment before its write-ahead log reaches the disk. That cannot make a retry
// trade twice: the command's operation is sent only after the executor's claim, whose
// synchronous commit comes later in the same log and so makes the record durable with it, and
// that claim checks the record in the same statement. It stores a record that was lost again
// from the command, and leaves unsent an operation whose client order id a retry bound to an
// operation of its own after the crash (command/executor/executions.go, claimRows). A sweep's
// record stays synchronous: it holds the legs' commands, which no one command can restore.
// The RESULT answer saves the wait for the disk (docs/benchmarks.md).
const (
	syncCommit  = ``
	asyncCommit = `, ` + postgres.AsyncCommitItem
)

// roundCommit is the commit of an insert round of the records tried: asynchronous when each
// of them is one command's.
func roundCommit(recs []Record, tried []int) string {
	for _, i := range tried {
		if len(recs[i].Envelopes) != 1 {
			return syncCommit
		}
	}
	return asyncCommit
}

// Retention is how long a client order id stays bound to its operation.
const Retention = trading.ClientOrderIDRetention

// NewRecords builds the store.
func NewRecords(pool *pgxpool.Pool) (*Records, error) {
	if pool == nil {
		return nil, errors.New("command: idempotency records need a pool")
	}
	s := &Records{pool: pool, retention: Retention, analyzer: postgres.NewAnalyzer(pool, nil, "cmd.idempotency")}
	s.group = group.New(s.insert, group.Options{Detached: true})
	s.lookups = group.New(s.exist, group.Options{Detached: true, Pace: lookupPace})
	return s, nil
}

// Busy reports whether an insert round is running, which a record inserted now would wait
// for (a load that fills the rounds back to back).
func (s *Records) Busy() bool { return s.group.Busy() }

// Purge deletes the records that expired more than a retention ago (they are already
// treated as absent) and returns how many it deleted.
func (s *Records) Purge(ctx context.Context) (int64, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM cmd.idempotency WHERE created_at < now() - make_interval(secs => $1)`,
		2*s.retention.Seconds())
	if err != nil {
		return 0, fmt.Errorf("purge idempotency records: %w", err)
	}
	return tag.RowsAffected(), nil
}

// Get returns the record of (apiKeyID, clientOrderID); ok is false when there is none.
func (s *Records) Get(ctx context.Context, apiKeyID int64, clientOrderID string) (Record, bool, error) {
	rows, err := s.pool.Query(ctx, `SELECT api_key_id, client_order_id, operation, login, operation_id, tag, attempt,
		command, response FROM cmd.idempotency WHERE api_key_id = $1 AND client_order_id = $2
		AND created_at > now() - make_interval(secs => $3)`, apiKeyID, clientOrderID, s.retention.Seconds())
	if err != nil {
		return Record{}, false, fmt.Errorf("read idempotency record: %w", err)
	}
	recs, err := scanRecords(rows)
	if err != nil || len(recs) == 0 {
		return Record{}, false, err
	}
	return recs[0], true, nil
}

// Exists reports whether (apiKeyID, clientOrderID) holds a live record. The gateway's
// admission control asks it of every request it is about to shed (a retry is never shed),
// so under overload it is asked thousands of times a second: concurrent callers' lookups go
// in one statement, which reads no record.
func (s *Records) Exists(ctx context.Context, apiKeyID int64, clientOrderID string) (bool, error) {
	found, err := s.lookups.Do(ctx, []recordKey{{apiKeyID: apiKeyID, coid: clientOrderID}})
	if err != nil {
		return false, err
	}
	return found[0], nil
}

// lookupPace is the least time between two rounds of lookups. Exists is asked of requests
// about to be shed, so it is asked most when the machine has the least to spare: a -1008
// answered a few milliseconds later costs its client nothing, while a statement per request
// cost Postgres and the gateway about as much CPU as the orders the shedding protected
// (docs/benchmarks.md). A lookup alone, after a quiet moment, still goes at once.
const lookupPace = 5 * time.Millisecond

// lookupTimeout bounds one round of lookups (it serves several requests).
const lookupTimeout = 5 * time.Second

// exist is one round of Exists: found[i] tells whether keys[i] holds a live record.
func (s *Records) exist(ctx context.Context, keys []recordKey) ([]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	ids, coids := make([]int64, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		ids[i], coids[i] = k.apiKeyID, k.coid
	}
	rows, err := s.pool.Query(ctx, `SELECT k.i FROM unnest($1::bigint[], $2::text[]) WITH ORDINALITY AS k(api_key_id, client_order_id, i)
		WHERE EXISTS (SELECT 1 FROM cmd.idempotency c WHERE c.api_key_id = k.api_key_id AND c.client_order_id = k.client_order_id
			AND c.created_at > now() - make_interval(secs => $3))`, ids, coids, s.retention.Seconds())
	if err != nil {
		return nil, fmt.Errorf("look up idempotency records: %w", err)
	}
	defer rows.Close()
	found := make([]bool, len(keys))
	for rows.Next() {
		var i int64
		if err := rows.Scan(&i); err != nil {
			return nil, fmt.Errorf("look up idempotency records: %w", err)
		}
		found[i-1] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up idempotency records: %w", err)
	}
	return found, nil
}

// GetMany returns the records of apiKeyID among clientOrderIDs, by client order id.
func (s *Records) GetMany(ctx context.Context, apiKeyID int64, clientOrderIDs []string) (map[string]Record, error) {
	rows, err := s.pool.Query(ctx, `SELECT api_key_id, client_order_id, operation, login, operation_id, tag, attempt,
		command, response FROM cmd.idempotency WHERE api_key_id = $1 AND client_order_id = ANY($2)
		AND created_at > now() - make_interval(secs => $3)`, apiKeyID, clientOrderIDs, s.retention.Seconds())
	if err != nil {
		return nil, fmt.Errorf("read idempotency records: %w", err)
	}
	recs, err := scanRecords(rows)
	if err != nil {
		return nil, err
	}
	out := make(map[string]Record, len(recs))
	for _, r := range recs {
		out[r.ClientOrderID] = r
	}
	return out, nil
}

func scanRecords(rows pgx.Rows) ([]Record, error) {
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var opID, tag *string
		var cmd, resp []byte
		if err := rows.Scan(&r.APIKeyID, &r.ClientOrderID, &r.Kind, &r.Login, &opID, &tag, &r.Attempt, &cmd, &resp); err != nil {
			return nil, fmt.Errorf("scan idempotency record: %w", err)
		}
		if opID != nil {
			r.OperationID = *opID
		}
		if tag != nil {
			r.Tag = *tag
		}
		if len(cmd) > 0 {
			if err := json.Unmarshal(cmd, &r.Envelopes); err != nil {
				return nil, fmt.Errorf("decode stored command of %s: %w", r.ClientOrderID, err)
			}
		}
		r.Response = resp
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read idempotency records: %w", err)
	}
	return out, nil
}

// Insert stores the records that do not exist yet (or whose record expired) and returns the
// keys it stored; the others already had a record (a retry, or a concurrent request under the
// same id, which the caller answers from the stored record). Concurrent callers' records go
// in one statement and one commit (group commit): under load the inserts grow rather than
// multiply.
func (s *Records) Insert(ctx context.Context, recs []Record) (map[recordKey]bool, error) {
	inserted := make(map[recordKey]bool, len(recs))
	if len(recs) == 0 {
		return inserted, nil
	}
	done, err := s.group.Do(ctx, recs)
	if err != nil {
		return nil, err
	}
	for i, r := range recs {
		if done[i] {
			inserted[r.key()] = true
		}
	}
	return inserted, nil
}

// insertTimeout bounds one round of inserts (it serves several requests).
const insertTimeout = 10 * time.Second

// insert stores recs in one statement; inserted[i] tells whether recs[i] is the record now
// stored under its key. Of two records with one key in a round (concurrent requests under the
// same id) only the first is tried: the other finds it stored.
func (s *Records) insert(ctx context.Context, recs []Record) ([]bool, error) {
	ctx, cancel := context.WithTimeout(ctx, insertTimeout)
	defer cancel()
	inserted := make([]bool, len(recs))
	first := make(map[recordKey]int, len(recs))
	var tried []int
	for i, r := range recs {
		if _, dup := first[r.key()]; !dup {
			first[r.key()] = i
			tried = append(tried, i)
		}
	}
	// In key order: two rounds that meet on keys (the executor storing records from their
	// commands while their gateways' inserts run: command/executor/executions.go) wait for
	// each other in one order, never in a cycle (Postgres aborted such a pair as a deadlock).
	slices.SortFunc(tried, func(a, b int) int {
		return cmp.Or(cmp.Compare(recs[a].APIKeyID, recs[b].APIKeyID), strings.Compare(recs[a].ClientOrderID, recs[b].ClientOrderID))
	})
	n := len(tried)
	keys := make([]int64, n)
	ids, kinds, ops, tags, hashes := make([]string, n), make([]string, n), make([]string, n), make([]string, n),
		make([][]byte, n)
	logins, attempts := make([]int64, n), make([]int32, n)
	cmds, resps := make([]string, n), make([]*string, n)
	claimAt, claims := make([]*time.Time, n), false
	for j, i := range tried {
		r := recs[i]
		cmd, err := json.Marshal(r.Envelopes)
		if err != nil {
			return nil, fmt.Errorf("encode command of %s: %w", r.ClientOrderID, err)
		}
		h := sha256.Sum256(cmd)
		keys[j], ids[j], kinds[j], logins[j], ops[j], tags[j] = r.APIKeyID, r.ClientOrderID, string(r.Kind), r.Login, r.OperationID, r.Tag
		attempts[j], hashes[j], cmds[j] = int32(max(r.Attempt, 1)), h[:], string(cmd)
		if len(r.Response) > 0 {
			s := string(r.Response)
			resps[j] = &s
		}
		if r.Claim != nil {
			claimAt[j], claims = &r.Claim.At, true
		}
	}
	args := []any{keys, ids, kinds, logins, ops, tags, attempts, hashes, cmds, resps, s.retention.Seconds()}
	stmt := insertRecords[roundCommit(recs, tried)]
	if claims {
		// Synchronous: a "sent" row lost in a crash could send an operation twice.
		stmt = insertClaimedRecords
		args = append(args, claimAt)
	}
	sql, args := stmt.For(n, args) // a single record (a RESULT's): scalars, not arrays
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("insert idempotency records: %w", err)
	}
	defer rows.Close()
	stored := 0
	for rows.Next() {
		var k recordKey
		var op string
		var claimed bool
		dest := []any{&k.apiKeyID, &k.coid, &op}
		if claims {
			dest = append(dest, &claimed)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("insert idempotency records: %w", err)
		}
		if i, ok := first[k]; ok && recs[i].OperationID == op {
			inserted[i] = true
			stored++
			if c := recs[i].Claim; c != nil {
				c.Claimed = claimed
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("insert idempotency records: %w", err)
	}
	s.analyzer.Added(stored)
	return inserted, nil
}

// insertRecords are insertRecordsSQL by commit.
var insertRecords = map[string]postgres.RowsStatement{
	syncCommit:  postgres.NewRowsStatement(func(one bool) string { return insertRecordsSQL(syncCommit, one) }),
	asyncCommit: postgres.NewRowsStatement(func(one bool) string { return insertRecordsSQL(asyncCommit, one) }),
}

// insertRecordsSQL stores a round's records (commit: syncCommit or asyncCommit) and returns
// the key and operation of each record it stored; one: a round of one record, whose arguments
// are scalars (postgres.OneRow).
func insertRecordsSQL(commit string, one bool) string {
	const params = `$1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::text[], $7::int[], $8::bytea[],
			$9::text[], $10::text[]`
	const names = `k, c, o, l, op, t, a, h, cmd, r`
	return `INSERT INTO cmd.idempotency (api_key_id, client_order_id, operation, login, operation_id, tag,
			attempt, request_hash, command, response, status)
		SELECT k, c, o, l, op, t, a, h, cmd::jsonb, r::jsonb, 'QUEUED'
		FROM ` + postgres.Rows(params, "x", names, one) + commit + `
		ON CONFLICT (api_key_id, client_order_id) DO UPDATE SET operation = EXCLUDED.operation, login = EXCLUDED.login,
			operation_id = EXCLUDED.operation_id, tag = EXCLUDED.tag, attempt = EXCLUDED.attempt,
			request_hash = EXCLUDED.request_hash, command = EXCLUDED.command, response = EXCLUDED.response,
			status = EXCLUDED.status, created_at = now(), updated_at = now()
			WHERE cmd.idempotency.created_at <= now() - make_interval(secs => $11)
		RETURNING api_key_id, client_order_id, operation_id`
}

// insertClaimedRecordsSQL is insertRecordsSQL, synchronous, that also stores the executor's
// "sent" row (cmd.executions) of each record it stored that carries a claim ($12, the
// claims' times, NULL for none), and returns whether it stored that row: not when another
// executor's claim came first (the row is then that one's).
var insertClaimedRecords = postgres.NewRowsStatement(insertClaimedRecordsSQL)

func insertClaimedRecordsSQL(one bool) string {
	claims := postgres.Rows(`$5::text[], $12::timestamptz[]`, "c", "op, at", one)
	return `WITH stored AS (` + insertRecordsSQL(syncCommit, one) + `, login, tag, attempt, operation),
	claimed AS (INSERT INTO cmd.executions (operation_id, attempt, login, tag, kind, sent_at)
		SELECT s.operation_id, s.attempt, s.login, s.tag, s.operation, c.at
		FROM stored s JOIN ` + claims + ` ON c.op = s.operation_id
		WHERE c.at IS NOT NULL
		ON CONFLICT (operation_id, attempt) DO NOTHING
		RETURNING operation_id)
	SELECT s.api_key_id, s.client_order_id, s.operation_id, EXISTS (SELECT 1 FROM claimed c WHERE c.operation_id = s.operation_id)
	FROM stored s`
}

// NextAttempt moves the record from attempt seen to seen+1 with the new attempt's envelopes.
// It reports false when another retry moved it first (then that retry sends the attempt).
func (s *Records) NextAttempt(ctx context.Context, r Record, seen int, envs []events.Envelope) (bool, error) {
	cmd, err := json.Marshal(envs)
	if err != nil {
		return false, fmt.Errorf("encode command of %s: %w", r.ClientOrderID, err)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE cmd.idempotency SET attempt = $4, command = $5::jsonb, updated_at = now()
		WHERE api_key_id = $1 AND client_order_id = $2 AND attempt = $3`, r.APIKeyID, r.ClientOrderID, seen, seen+1, string(cmd))
	if err != nil {
		return false, fmt.Errorf("next attempt of %s: %w", r.ClientOrderID, err)
	}
	return tag.RowsAffected() == 1, nil
}
