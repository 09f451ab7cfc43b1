package group

import "sync"

// Drain runs what is handed to Add in the background, in the order it was handed in, on one
// goroutine at most: each run takes everything pending, so what comes while a run is under way
// goes together in the next (work that must not hold up its caller: notifications, records
// written after the fact). Wait returns once nothing runs; an owner that stops calls it, so
// that no run outlives it.
type Drain[T any] struct {
	run func(items []T)

	mu      sync.Mutex
	pending []T
	running bool
	done    sync.WaitGroup
}

// NewDrain returns a drain whose runs run does.
func NewDrain[T any](run func(items []T)) *Drain[T] { return &Drain[T]{run: run} }

// Add hands items in and starts the background run when none is under way.
func (d *Drain[T]) Add(items ...T) {
	if len(items) == 0 {
		return
	}
	d.mu.Lock()
	d.pending = append(d.pending, items...)
	if d.running {
		d.mu.Unlock()
		return
	}
	d.running = true
	d.done.Add(1)
	d.mu.Unlock()
	go d.loop()
}

// Wait returns once no run is under way.
func (d *Drain[T]) Wait() { d.done.Wait() }

func (d *Drain[T]) loop() {
	defer d.done.Done()
	for {
		d.mu.Lock()
		items := d.pending
		d.pending = nil
		if len(items) == 0 {
			d.running = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		d.run(items)
	}
}
