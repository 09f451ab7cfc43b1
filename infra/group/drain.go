package group

import (
	"sync"
	"time"
)

// Drain runs what is handed to Add in the background, in the order it was handed in, on one
// goroutine at most: each run takes everything pending, so what comes while a run is under way
// goes together in the next (work that must not hold up its caller: notifications, records
// written after the fact). Wait returns once nothing runs; an owner that stops calls it, so
// that no run outlives it.
//
// The goroutine lingers a little (drainLinger) once nothing is pending, for what comes next:
// under a steady flow the runs share one goroutine, whose stack has grown to what a run needs,
// instead of each starting a new one that grows its stack again (a copy at each doubling).
type Drain[T any] struct {
	run    func(items []T)
	linger time.Duration

	mu      sync.Mutex
	pending []T
	running bool
	waiting int           // callers in Wait: the goroutine does not linger
	kick    chan struct{} // wakes the lingering goroutine (Add, Wait)
	done    sync.WaitGroup
}

// drainLinger is how long the goroutine waits for more once nothing is pending.
const drainLinger = 250 * time.Millisecond

// NewDrain returns a drain whose runs run does.
func NewDrain[T any](run func(items []T)) *Drain[T] {
	return &Drain[T]{run: run, linger: drainLinger, kick: make(chan struct{}, 1)}
}

// Add hands items in and starts the background run when none is under way.
func (d *Drain[T]) Add(items ...T) {
	if len(items) == 0 {
		return
	}
	d.mu.Lock()
	d.pending = append(d.pending, items...)
	if d.running {
		d.mu.Unlock()
		d.wake()
		return
	}
	d.running = true
	d.done.Add(1)
	d.mu.Unlock()
	go d.loop()
}

// Wait returns once no run is under way (a lingering goroutine is told to end at once).
func (d *Drain[T]) Wait() {
	d.mu.Lock()
	d.waiting++
	d.mu.Unlock()
	d.wake()
	d.done.Wait()
	d.mu.Lock()
	d.waiting--
	d.mu.Unlock()
}

func (d *Drain[T]) wake() {
	select {
	case d.kick <- struct{}{}:
	default: // a wake-up is pending already
	}
}

func (d *Drain[T]) loop() {
	defer d.done.Done()
	var idle *time.Timer
	defer func() {
		if idle != nil {
			idle.Stop()
		}
	}()
	lingered := false
	for {
		d.mu.Lock()
		items := d.pending
		d.pending = nil
		if len(items) == 0 && (lingered || d.waiting > 0) {
			d.running = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		if len(items) > 0 {
			lingered = false
			d.run(items)
			continue
		}
		if idle == nil {
			idle = time.NewTimer(d.linger)
		} else {
			idle.Reset(d.linger)
		}
		select {
		case <-d.kick:
		case <-idle.C:
			lingered = true
		}
	}
}
