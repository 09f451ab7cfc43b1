package projections

import (
	"slices"
	"sync"
	"testing"

	"tradesvc/events"
	"tradesvc/query"
)

// countingScope matches the logins of set and counts how often it was asked, per login.
type countingScope struct {
	mu    sync.Mutex
	set   map[int64]bool
	asked map[int64]int
}

func (c *countingScope) match(login int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked[login]++
	return c.set[login]
}

func newCountingScope(logins ...int64) *countingScope {
	c := &countingScope{set: map[int64]bool{}, asked: map[int64]int{}}
	for _, l := range logins {
		c.set[l] = true
	}
	return c
}

// dealRows are user-stream rows of part 0 numbered from first, one per login given.
func dealRows(first int64, logins ...int64) []query.Change {
	rows := make([]query.Change, len(logins))
	for i, l := range logins {
		rows[i] = query.Change{Part: 0, Seq: first + int64(i), Login: l, Kind: query.ChangeDeal,
			Fact: &events.DealAdded{DealID: first + int64(i)}}
	}
	return rows
}

func received(sub query.Subscription) []int64 {
	var seqs []int64
	for {
		select {
		case c := <-sub.C():
			seqs = append(seqs, c.Seq)
		default:
			return seqs
		}
	}
}

// One dispatch asks each subscription's Match once per login of its rows, not once per row,
// and every subscription still gets exactly its logins' rows, in order. A subscription
// ended by a row (its buffer full) gets none of the dispatch's later rows; the others do.
func TestChangeFeedDispatchAsksEachScopeOncePerLogin(t *testing.T) {
	f, err := NewChangeFeed(ChangeFeedConfig{ConnString: "postgres://unused"})
	if err != nil {
		t.Fatal(err)
	}
	ones, both, small := newCountingScope(1), newCountingScope(1, 2), newCountingScope(2)
	subOnes := f.Subscribe(query.Scope{Match: ones.match}, 100)
	subBoth := f.Subscribe(query.Scope{Match: both.match}, 100)
	subSmall := f.Subscribe(query.Scope{Match: small.match}, 2)

	// Rows 1..8: logins 1, 2, 1, 2, 2, 1, 2, 2 (login 2 five times: the small buffer of 2
	// overflows at its third row, seq 5).
	f.Publish(0, dealRows(1, 1, 2, 1, 2, 2, 1, 2, 2))

	for name, s := range map[string]*countingScope{"ones": ones, "both": both, "small": small} {
		for login, n := range s.asked {
			if n != 1 {
				t.Errorf("%s: Match(%d) asked %d times in one dispatch; want once", name, login, n)
			}
		}
		if len(s.asked) != 2 {
			t.Errorf("%s: Match asked of logins %v; want 1 and 2 (once each)", name, s.asked)
		}
	}
	for name, c := range map[string]struct {
		sub  query.Subscription
		want []int64
	}{
		"ones": {subOnes, []int64{1, 3, 6}},
		"both": {subBoth, []int64{1, 2, 3, 4, 5, 6, 7, 8}},
	} {
		if got := received(c.sub); !slices.Equal(got, c.want) {
			t.Errorf("%s received %v; want %v", name, got, c.want)
		}
	}
	select {
	case <-subSmall.Done():
	default:
		t.Fatal("the subscription whose buffer overflowed was not ended")
	}
	if got := received(subSmall); !slices.Equal(got, []int64{2, 4}) {
		t.Errorf("the ended subscription received %v; want its first two rows, 2 and 4, and nothing after", got)
	}

	// The next dispatch asks again: a scope may have changed between two.
	ones.set[2] = true
	f.Publish(0, dealRows(9, 2))
	if ones.asked[2] != 2 {
		t.Errorf("ones: Match(2) asked %d times over two dispatches; want twice", ones.asked[2])
	}
	if got := received(subOnes); !slices.Equal(got, []int64{9}) {
		t.Errorf("ones, its scope widened to login 2, received %v; want [9]", got)
	}
}
