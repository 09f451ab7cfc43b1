package executor

import (
	"context"
	"sync"
	"time"

	"tradesvc/command"
	"tradesvc/infra/kafka/batch"
)

// EarlyClaims lets the gateway of this process make the executor's claim of a fresh operation
// (its "sent" row in cmd.executions) with the operation's idempotency record, in the same
// statement (command.Records, command.EarlyClaimer), instead of the executor making it once it
// reads the command. The claim is then off the answer's path: the record's insert runs beside
// the command's append, and the executor, reading the command, waits for the insert already
// under way rather than starting a round trip of its own. The row is the one the executor's
// claim would have written, with the same synchronous commit, before anything is sent, so
// what a crash leaves behind is as after the executor's own claim.
//
// A record carries a claim only for a login whose commands this executor has read from a
// partition it still holds: it is then the one that reads this command too, unless the
// partition moves meanwhile. When it moves, the claims made for commands not read yet are
// released (their rows deleted, as a stopping executor releases the rows it claimed and never
// started), so that the next owner simply sends them; a claim it cannot release is
// reconciled by the next owner like any claim whose executor died before sending.
type EarlyClaims struct {
	now func() time.Time

	mu     sync.Mutex
	held   map[int32]bool       // the command topic's partitions this executor holds
	logins map[int64]int32      // the partition each login's commands were read from, while held
	claims map[string]*earlyRow // by operation id (first attempts), until a batch takes them
	// inserting holds the claims whose insert has not ended, until ClaimedEarly.
	inserting map[*command.EarlyClaim]*earlyRow
	swept     time.Time
}

// earlyRow is one claim made with a record.
type earlyRow struct {
	id    string // the operation's
	login int64
	claim *command.EarlyClaim
	done  chan struct{} // closed once the insert has ended
	err   error         // the insert's failure: whether the row was stored is unknown
	// released is closed once a release of the row (the partition moved) has ended; nil
	// while none runs.
	released chan struct{}
}

// NewEarlyClaims builds the registry an executor and the gateway of one process share; now is
// the executor's clock.
func NewEarlyClaims(now func() time.Time) *EarlyClaims {
	return &EarlyClaims{now: now, held: map[int32]bool{}, logins: map[int64]int32{}, claims: map[string]*earlyRow{},
		inserting: map[*command.EarlyClaim]*earlyRow{}}
}

var _ command.EarlyClaimer = (*EarlyClaims)(nil)

// ClaimEarly implements command.EarlyClaimer.
func (e *EarlyClaims) ClaimEarly(login int64, operationID string) *command.EarlyClaim {
	now := e.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.logins[login]; !ok || !e.held[p] {
		return nil
	}
	if _, dup := e.claims[operationID]; dup {
		return nil
	}
	e.sweep(now)
	c := &command.EarlyClaim{At: now.Truncate(time.Microsecond)} // Postgres keeps microseconds
	r := &earlyRow{id: operationID, login: login, claim: c, done: make(chan struct{})}
	e.claims[operationID], e.inserting[c] = r, r
	return c
}

// ClaimedEarly implements command.EarlyClaimer.
func (e *EarlyClaims) ClaimedEarly(c *command.EarlyClaim, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.inserting[c]; r != nil {
		delete(e.inserting, c)
		r.err = err
		close(r.done)
	}
}

// earlyForget is how long a claim no command came for is kept: its record's append failed and
// no retry appended it again, or its partition moved before a release could see it. Its row
// is then settled like any claim whose executor died before sending (settle.go).
const earlyForget = abandonedAfter

// sweep forgets the claims older than earlyForget; the caller holds e.mu.
func (e *EarlyClaims) sweep(now time.Time) {
	if now.Sub(e.swept) < earlyForget {
		return
	}
	e.swept = now
	for id, r := range e.claims {
		if r.released == nil && now.Sub(r.claim.At) > earlyForget {
			delete(e.claims, id)
		}
	}
}

// earlyTaken is what the early claims of a batch came to.
type earlyTaken struct {
	// claimed: the rows stored with their records, with the time they carry.
	claimed map[opKey]time.Time
	// unknown: the claims whose insert failed (the row may be stored), with their time.
	unknown map[opKey]time.Time
}

// take hands the executor the early claims of a batch read from partition, waiting for the
// inserts still under way, and learns the batch's logins as the partition's. A claim that is
// being released is waited for and left out: its row is gone, or kept as unknown.
func (e *EarlyClaims) take(ctx context.Context, partition int32, ops []operation) earlyTaken {
	if e == nil {
		return earlyTaken{}
	}
	out := earlyTaken{claimed: map[opKey]time.Time{}, unknown: map[opKey]time.Time{}}
	var mine, releasing []*earlyRow
	var keys []opKey
	e.mu.Lock()
	held := e.held[partition]
	for i := range ops {
		o := &ops[i]
		if held {
			e.logins[o.op.Login] = partition
		}
		r := e.claims[o.op.OperationID]
		if r == nil || o.op.Attempt != 1 || r.login != o.op.Login {
			continue
		}
		if r.released != nil {
			releasing = append(releasing, r)
			continue
		}
		delete(e.claims, o.op.OperationID)
		mine, keys = append(mine, r), append(keys, o.key())
	}
	e.mu.Unlock()
	for _, r := range releasing {
		select {
		case <-r.released:
		case <-ctx.Done():
		}
	}
	timeout := time.NewTimer(earlyInsertWait)
	defer timeout.Stop()
	for i, r := range mine {
		select {
		case <-r.done:
		case <-ctx.Done():
			out.unknown[keys[i]] = r.claim.At
			continue
		case <-timeout.C:
			timeout.Reset(0) // the others are not waited for either
			out.unknown[keys[i]] = r.claim.At
			continue
		}
		switch {
		case r.err != nil:
			out.unknown[keys[i]] = r.claim.At
		case r.claim.Claimed:
			out.claimed[keys[i]] = r.claim.At
		}
	}
	return out
}

// hold records that the executor now reads partition.
func (e *EarlyClaims) hold(partition int32) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.held[partition] = true
}

// release records that the executor no longer reads partition, and returns the claims made
// for its logins that no batch took: the caller deletes their rows (releaseEarly), then calls
// released.
func (e *EarlyClaims) release(partition int32) []*earlyRow {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.held, partition)
	var out []*earlyRow
	for _, r := range e.claims {
		if p, ok := e.logins[r.login]; ok && p == partition && r.released == nil {
			r.released = make(chan struct{})
			out = append(out, r)
		}
	}
	for login, p := range e.logins {
		if p == partition {
			delete(e.logins, login)
		}
	}
	return out
}

// released ends the release of rows: they are forgotten, and a batch waiting for them goes on.
func (e *EarlyClaims) released(rows []*earlyRow) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, r := range rows {
		if e.claims[r.id] == r {
			delete(e.claims, r.id)
		}
		close(r.released)
	}
}

// earlyObserver tells the early claims which partitions the executor holds, and releases the
// claims of a partition it no longer holds; it passes everything on to the executor's own
// Observer.
type earlyObserver struct {
	batch.Observer
	x *Executor
}

func (o earlyObserver) Claimed(topic string, partition int32, next, highWater int64) {
	o.x.cfg.Early.hold(partition)
	o.Observer.Claimed(topic, partition, next, highWater)
}

func (o earlyObserver) Released(topic string, partition int32) {
	if rows := o.x.cfg.Early.release(partition); len(rows) > 0 {
		go o.x.releaseEarly(rows) // an Observer must not block
	}
	o.Observer.Released(topic, partition)
}

// releaseEarly deletes the rows of early claims no batch took, once their inserts have ended
// (within earlyInsertWait): the executor no longer reads their partition and never sent them.
func (x *Executor) releaseEarly(rows []*earlyRow) {
	defer x.cfg.Early.released(rows)
	timeout := time.NewTimer(earlyInsertWait)
	defer timeout.Stop()
	unsent := map[opKey]time.Time{}
	for _, r := range rows {
		select {
		case <-r.done:
		case <-timeout.C:
			x.log.Warn("an early claim's insert did not end; the next owner reconciles its row if it was stored")
			return
		}
		if r.err != nil || r.claim.Claimed {
			unsent[opKey{id: r.id, attempt: 1}] = r.claim.At
		}
	}
	x.store.releaseRows(unsent)
}

// earlyInsertWait bounds the wait for an early claim's insert (the records' own bound, with a
// margin).
const earlyInsertWait = 15 * time.Second
