package projections

import (
	"sync"

	"tradesvc/events"
)

// inBandSeqs remembers, per partition, the feed sequences of the facts this projection
// applied from outcomes (the facts a send caused, answered in band). The relay appends every
// fact again a moment later; a copy whose sequence is here is skipped without a statement.
// A copy this process does not remember (after a restart, or a fact the outcome did not
// carry) is applied as usual, which changes nothing for a fact already applied: every fact
// statement moves its row only forward by sequence, so skipping is only a saving.
type inBandSeqs struct {
	mu    sync.Mutex
	parts map[int32]*seqRing
}

// seqRingSize bounds what is remembered per partition: the relay's copies follow within
// seconds, far fewer facts than this.
const seqRingSize = 1 << 14

// seqRing is a set of recent sequences: a map, forgetting the oldest beyond its size.
type seqRing struct {
	set  map[uint64]struct{}
	ring []uint64
	next int
}

func newInBandSeqs() *inBandSeqs { return &inBandSeqs{parts: map[int32]*seqRing{}} }

// remember adds the sequences of the in-band facts of a committed transaction.
func (s *inBandSeqs) remember(part int32, seqs []uint64) {
	if len(seqs) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.parts[part]
	if r == nil {
		r = &seqRing{set: make(map[uint64]struct{}, seqRingSize), ring: make([]uint64, seqRingSize)}
		s.parts[part] = r
	}
	for _, seq := range seqs {
		if _, ok := r.set[seq]; ok {
			continue
		}
		if old := r.ring[r.next]; old != 0 {
			delete(r.set, old)
		}
		r.ring[r.next], r.set[seq] = seq, struct{}{}
		r.next = (r.next + 1) % len(r.ring)
	}
}

// applied reports whether ev is a fact of part applied in band.
func (s *inBandSeqs) applied(part int32, ev events.Event) bool {
	seq, ok := events.FactSeq(ev)
	if !ok {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.parts[part]
	if r == nil {
		return false
	}
	_, ok = r.set[seq]
	return ok
}
