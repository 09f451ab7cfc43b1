package batch

import (
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

// trail paces the fetches of one session's trailing partitions (Config.Trailing): the first
// message of a batch pauses all of them for Config.TrailFor, then they are resumed. Fetches
// leave out paused partitions, so whatever arrives on them meanwhile comes in the first
// fetch after the pause. The first message after a quiet spell still comes at once.
type trail struct {
	group sarama.ConsumerGroup
	parts map[string][]int32
	every time.Duration

	mu      sync.Mutex
	paused  bool
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

// arrived pauses the trailing partitions for the pace, unless they are paused already.
func (t *trail) arrived() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.paused || t.stopped {
		return
	}
	t.paused = true
	t.group.Pause(t.parts)
	t.timer = time.AfterFunc(t.every, t.resume)
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
