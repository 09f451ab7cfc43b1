package projections

import (
	"sync"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka/batch"
)

// seenApplied remembers what recent transactions of this projection committed, so that the
// copies every event has on its way (a fact the outcome carried in band and the relay appends
// again, a command the outcome embeds and the command topic holds too) are skipped without a
// statement, and the owner of a fact's tag is known without a read:
//
//   - the feed sequences of the trade-server facts applied (in band or from the relay);
//   - the operations (id and attempt) whose command was applied, with their tag's owner;
//   - the tags of the operations whose outcome was applied: a young relay fact of such a tag
//     that is not among the outcome's in-band facts is the relay's own (trading_owners.go).
//
// A copy this process does not remember (after a restart, or one older than what is kept) is
// applied as usual, which changes nothing: every statement moves its row only forward (by
// sequence for facts, by attempt for commands), so skipping is only a saving.
type seenApplied struct {
	mu       sync.Mutex
	facts    ring[uint64]
	commands ring[string]
	outcomes ring[loginTag]        // operations whose outcome (with its in-band facts) was applied
	attempt  map[string]int        // operation id → attempt applied (keys: commands)
	owners   map[loginTag]tagOwner // (login, tag) → operation, for the commands kept
	tagOf    map[string]loginTag   // operation id → its (login, tag), to forget it
	commit   chan struct{}         // closed by the next commit (nextCommit)
}

// seenSize bounds what is remembered of each kind: the copies follow within seconds, far
// fewer events than this.
const seenSize = 1 << 15

func newSeenApplied() *seenApplied {
	s := &seenApplied{}
	s.empty()
	return s
}

// empty makes s remember nothing (s.mu held, or s not shared yet).
func (s *seenApplied) empty() {
	s.facts, s.commands, s.outcomes = newRing[uint64](seenSize), newRing[string](seenSize), newRing[loginTag](seenSize)
	s.attempt, s.owners, s.tagOf = map[string]int{}, map[loginTag]tagOwner{}, map[string]loginTag{}
}

// forgetAll forgets everything remembered, at the start of every consumer session
// (Positions.OnLoad): the store may have taken back the transactions that taught it (the
// trading projection commits asynchronously, and a crash of Postgres takes back its last
// commits, which the new session applies again), and a copy skipped for a fact the store no
// longer holds would be lost with it.
func (s *seenApplied) forgetAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.empty()
}

// fact reports whether ev is a trade-server fact already applied.
func (s *seenApplied) fact(ev events.Event) bool {
	seq, ok := events.FactSeq(ev)
	return ok && s.factSeq(seq)
}

// factSeq reports whether the fact of feed sequence seq was applied.
func (s *seenApplied) factSeq(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.facts.has(seq)
}

// outcome reports whether the outcome of the operation tagged k was applied (recently, by
// this process).
func (s *seenApplied) outcome(k loginTag) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.outcomes.has(k)
}

// command reports whether the command ev (of its attempt or a later one) was applied.
func (s *seenApplied) command(ev events.Event) bool {
	r, ok := trading.RequestOf(ev)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.attempt[r.OperationID]
	return ok && a >= r.Attempt
}

// owner returns the operation whose tag (login, tag) is, when a command applied recently
// carried it.
func (s *seenApplied) owner(k loginTag) (tagOwner, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.owners[k]
	return o, ok
}

// nextCommit returns a channel closed when the next transaction's items are remembered (or
// the next void outcome's operation: voided).
func (s *seenApplied) nextCommit() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.commit == nil {
		s.commit = make(chan struct{})
	}
	return s.commit
}

// wake closes the channel nextCommit returned (s.mu held).
func (s *seenApplied) wake() {
	if s.commit != nil {
		close(s.commit)
		s.commit = nil
	}
}

// committed remembers the facts and commands of a committed transaction.
func (s *seenApplied) committed(items []*tradingItem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wake()
	for _, it := range items {
		if seq, ok := events.FactSeq(it.ev); ok {
			s.facts.add(seq, nil)
			continue
		}
		if o, ok := it.ev.(*events.ExecutionOutcome); ok {
			s.outcomes.add(loginTag{o.Login, o.Tag}, nil)
			continue
		}
		r, ok := trading.RequestOf(it.ev)
		if !ok {
			continue
		}
		s.applied(r.OperationID, r.Attempt)
		k := loginTag{r.Login, r.Tag}
		s.owners[k] = ownerOf(r)
		s.tagOf[r.OperationID] = k
	}
}

// voided remembers the operations whose void outcome was applied (trading_orphans.go) as
// settled: their command is never applied, so a copy of it read later is skipped like an
// applied one, and the command topic's consumer stops waiting for it (holdCommands; woken as
// by a commit).
func (s *seenApplied) voided(msgs []batch.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		out, ok := m.Event.(*events.ExecutionOutcome)
		if !ok || !out.Void {
			continue
		}
		s.wake()
		s.applied(out.OperationID, out.Attempt)
	}
}

// learnOwner remembers the operation a tag belongs to, read from the read model.
func (s *seenApplied) learnOwner(k loginTag, o tagOwner) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.applied(o.operationID, 0) // its command itself is not known to be applied
	s.owners[k] = o
	s.tagOf[o.operationID] = k
}

// applied remembers that operation id's command is applied up to attempt (0: only that the
// operation exists), in the ring that forgets the oldest (s.mu held).
func (s *seenApplied) applied(id string, attempt int) {
	a, known := s.attempt[id]
	if !known {
		s.commands.add(id, s.forgetCommand)
	}
	s.attempt[id] = max(a, attempt)
}

// forgetCommand drops an operation the ring no longer holds (s.mu held).
func (s *seenApplied) forgetCommand(id string) {
	delete(s.attempt, id)
	if k, ok := s.tagOf[id]; ok {
		if s.owners[k].operationID == id {
			delete(s.owners, k)
		}
		delete(s.tagOf, id)
	}
}

// ring is a set of the most recent values, forgetting the oldest beyond its size.
type ring[T comparable] struct {
	set  map[T]struct{}
	vals []T
	used []bool
	next int
}

func newRing[T comparable](size int) ring[T] {
	return ring[T]{set: make(map[T]struct{}, size), vals: make([]T, size), used: make([]bool, size)}
}

func (r *ring[T]) has(v T) bool {
	_, ok := r.set[v]
	return ok
}

// add puts v in the set; the value it pushes out, if any, goes to evicted (nil: none needed).
func (r *ring[T]) add(v T, evicted func(T)) {
	if _, ok := r.set[v]; ok {
		return
	}
	if r.used[r.next] {
		old := r.vals[r.next]
		delete(r.set, old)
		if evicted != nil {
			evicted(old)
		}
	}
	r.vals[r.next], r.used[r.next], r.set[v] = v, true, struct{}{}
	r.next = (r.next + 1) % len(r.vals)
}
