package command

import (
	"context"
	"sync"
	"testing"

	"tradesvc/infra/testenv"
)

// Two gateways (two allocators over one database) never hand out the same tag, across
// several blocks of the sequence.
func TestTagsFromTwoAllocatorsNeverCollide(t *testing.T) {
	pool := testenv.MigratedPG(t)
	a, err := NewTags(pool)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewTags(pool)
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for _, src := range []*Tags{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 * tagBlock {
				tag, err := src.Next(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[tag] {
					t.Errorf("tag %s handed out twice", tag)
				}
				seen[tag] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 6*tagBlock {
		t.Fatalf("%d distinct tags, want %d", len(seen), 6*tagBlock)
	}
}
