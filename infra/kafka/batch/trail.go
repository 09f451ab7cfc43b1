package batch

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/infra/wait"
)

// trail paces the fetches of one session's trailing partitions (Config.Trailing): the first
// message of a batch pauses all of them for Config.TrailFor, then they are resumed. Fetches
// leave out paused partitions, so whatever arrives on them meanwhile comes in the first
// fetch after the pause. The first message after a quiet spell still comes at once. A fetch
// already in flight when the pause began can still bring messages of a paused partition
// (sarama leaves paused partitions out of the requests it makes, not out of the answers to
// those it made); such a message waits out the pause, as if it had come after it.
type trail struct {
	group sarama.ConsumerGroup
	parts map[string][]int32
	every time.Duration

	mu      sync.Mutex
	paused  bool
	until   time.Time // when the pause ends
	stopped bool
	timer   *time.Timer
}

// newTrail is the trail of a session that claimed claims; nil when none of them trails.
func newTrail(group sarama.ConsumerGroup, cfg Config, claims map[string][]int32) *trail {
	parts := map[string][]int32{}
	for topic, ps := range claims {
		if len(ps) > 0 && slices.Contains(cfg.Trailing, topic) {
			parts[topic] = ps
		}
	}
	if len(parts) == 0 || group == nil {
		return nil
	}
	return &trail{group: group, parts: parts, every: cfg.TrailFor}
}

// has reports whether topic trails in this session.
func (t *trail) has(topic string) bool {
	if t == nil {
		return false
	}
	_, ok := t.parts[topic]
	return ok
}

// arrived pauses the trailing partitions for the pace, unless they are paused already, and
// returns how long the message that arrived must wait: nothing when it began the pause,
// what is left of the pause when a fetch in flight brought it during one.
func (t *trail) arrived() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return 0
	}
	if t.paused {
		return time.Until(t.until)
	}
	t.paused, t.until = true, time.Now().Add(t.every)
	t.group.Pause(t.parts)
	t.timer = time.AfterFunc(t.every, t.resume)
	return 0
}

// await holds a message that arrived on a trailing partition until it may be handed over
// (arrived); the one handed over after a pause begins the next. It reports false when ctx
// ended first.
func (t *trail) await(ctx context.Context) bool {
	left := t.arrived()
	if left <= 0 {
		return true
	}
	if wait.For(ctx, left) != nil {
		return false
	}
	t.arrived()
	return true
}

func (t *trail) resume() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.paused {
		t.paused = false
		t.group.Resume(t.parts)
	}
}

// stop ends the pacing with the session and resumes what is paused.
func (t *trail) stop() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.stopped = true
	if t.timer != nil {
		t.timer.Stop()
	}
	t.mu.Unlock()
	t.resume()
}
