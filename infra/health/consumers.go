package health

import (
	"fmt"
	"sync"
	"time"

	"tradesvc/infra/kafka/batch"
)

// Consumers tracks the Kafka consumers of a process (projections, the executor) through
// their batch.Observer: which partitions each owns, how far behind the log it is, whether
// it keeps failing, and what it parked.
type Consumers struct {
	now func() time.Time
	// onParked, when set, is told of every parked message (metrics).
	onParked func(consumer, topic string)

	mu  sync.Mutex
	all map[string]*consumer
	hwm map[tp]int64 // newest offsets, from the consumers and from the Kafka probe
}

type tp struct {
	topic     string
	partition int32
}

type consumer struct {
	parts        map[tp]*partState
	disconnected error
	discSince    time.Time
	parked       int
	lastParked   string
}

type partState struct {
	next         int64     // the offset after the last applied message (negative: not known yet)
	marks        []endMark // ends of the partition seen beyond next, oldest first (BehindSince)
	claimedAt    time.Time
	appliedAt    time.Time // wall time of the last applied batch
	logTime      time.Time // log time of the last applied message
	caughtUpAt   time.Time // when a reading of the end last found nothing beyond next
	failingSince time.Time
	lastErr      string
}

// endMark says that the partition's end was at least hwm at time at: every message before
// hwm existed then.
type endMark struct {
	hwm int64
	at  time.Time
}

// maxMarks bounds the marks kept per partition. When full, the second oldest is dropped: the
// messages it covered are then dated by the next mark, later than they were seen, so
// BehindSince stays a lower bound on their age.
const maxMarks = 16

// observe records that the partition's end was hwm at now.
func (p *partState) observe(hwm int64, now time.Time) {
	if p.next >= 0 && hwm <= p.next {
		p.caughtUpAt = now
	}
	if p.next < 0 || hwm <= p.next || len(p.marks) > 0 && p.marks[len(p.marks)-1].hwm >= hwm {
		return
	}
	if len(p.marks) == maxMarks {
		p.marks = append(p.marks[:1], p.marks[2:]...)
	}
	p.marks = append(p.marks, endMark{hwm: hwm, at: now})
}

// applied moves next and forgets the marks it reached.
func (p *partState) applied(next int64) {
	p.next = next
	i := 0
	for i < len(p.marks) && p.marks[i].hwm <= next {
		i++
	}
	p.marks = append(p.marks[:0], p.marks[i:]...)
}

// noteEnd records the end of partition k for every consumer that owns it (c.mu held).
func (c *Consumers) noteEnd(k tp, hwm int64, now time.Time) {
	c.hwm[k] = max(c.hwm[k], hwm)
	for _, cs := range c.all {
		if p := cs.parts[k]; p != nil {
			p.observe(c.hwm[k], now)
		}
	}
}

// PartitionLag is where one partition of a consumer stands.
type PartitionLag struct {
	Topic     string
	Partition int32
	// BehindSince is zero while the consumer has applied everything this tracker knows the
	// partition holds; else the earliest time it knew of a message not applied yet. That is a
	// lower bound on the age of the oldest message not applied (late by at most the time
	// between two readings of the partition's end: the consumer's own batches, the Kafka
	// probe), so a consumer is never said to lag more than it does.
	BehindSince time.Time
}

// Lag lists the partitions the consumer called name owns, with since when each is behind.
func (c *Consumers) Lag(name string) []PartitionLag {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs := c.all[name]
	if cs == nil {
		return nil
	}
	out := make([]PartitionLag, 0, len(cs.parts))
	for k, p := range cs.parts {
		l := PartitionLag{Topic: k.topic, Partition: k.partition}
		if len(p.marks) > 0 {
			l.BehindSince = p.marks[0].at
		}
		out = append(out, l)
	}
	return out
}

// NewConsumers builds a tracker. onParked may be nil.
func NewConsumers(now func() time.Time, onParked func(consumer, topic string)) *Consumers {
	return &Consumers{now: now, onParked: onParked, all: map[string]*consumer{}, hwm: map[tp]int64{}}
}

// Observer returns the batch.Observer of the consumer called name.
func (c *Consumers) Observer(name string) batch.Observer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.all[name] == nil {
		c.all[name] = &consumer{parts: map[tp]*partState{}}
	}
	return observer{c: c, name: name}
}

// Partitions lists the partitions some consumer of this process owns, by topic.
func (c *Consumers) Partitions() map[string][]int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][]int32{}
	seen := map[tp]bool{}
	for _, cs := range c.all {
		for k := range cs.parts {
			if !seen[k] {
				seen[k] = true
				out[k.topic] = append(out[k.topic], k.partition)
			}
		}
	}
	return out
}

// SetHighWater records the newest offset of a partition (the Kafka probe reads it, so a
// consumer that stopped reading still shows its lag).
func (c *Consumers) SetHighWater(topic string, partition int32, hwm int64) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.noteEnd(tp{topic, partition}, hwm, now)
}

// ConsumerStatus is one consumer's part of the readiness report.
type ConsumerStatus struct {
	Partitions int `json:"partitions"`
	// LagEvents is how many messages of its partitions it has not applied yet.
	LagEvents int64 `json:"lagEvents"`
	// LagSeconds is the time since the later of the newest message it applied and the last
	// reading of the end that found it caught up: an upper bound on the age of the oldest
	// message it has not applied (0 when caught up).
	LagSeconds float64 `json:"lagSeconds"`
	// Stuck: behind or failing, without progress for longer than the stall bound;
	// StuckBecause says how.
	Stuck        bool   `json:"stuck"`
	StuckBecause string `json:"stuckBecause,omitempty"`
	// Failing is set while a batch keeps failing (it is retried); LastError says why.
	Failing      bool      `json:"failing"`
	FailingSince time.Time `json:"failingSince,omitzero"`
	LastError    string    `json:"lastError,omitempty"`
	// Disconnected says why it cannot reach Kafka or its group, when it cannot.
	Disconnected string    `json:"disconnected,omitempty"`
	LastApplied  time.Time `json:"lastApplied,omitzero"`
	// Parked counts the messages it parked in dead-letter topics since this process started.
	Parked     int    `json:"parked"`
	LastParked string `json:"lastParked,omitempty"`
}

// Status reports every consumer by name.
func (c *Consumers) Status(now time.Time, stall time.Duration) map[string]ConsumerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]ConsumerStatus{}
	for name, cs := range c.all {
		st := ConsumerStatus{Partitions: len(cs.parts), Parked: cs.parked, LastParked: cs.lastParked}
		var why string
		for k, p := range cs.parts {
			var lag int64
			if p.next >= 0 { // a new group starts at "oldest" (-2) until its first batch
				lag = max(0, c.hwm[k]-p.next)
			}
			st.LagEvents += lag
			if p.appliedAt.After(st.LastApplied) {
				st.LastApplied = p.appliedAt
			}
			progress := p.appliedAt
			if progress.IsZero() {
				progress = p.claimedAt
			}
			if lag > 0 {
				// Every message not applied came after the last one applied, and after the last
				// reading that found the partition caught up.
				since := p.logTime
				if since.IsZero() {
					since = progress
				}
				if p.caughtUpAt.After(since) {
					since = p.caughtUpAt
				}
				st.LagSeconds = max(st.LagSeconds, now.Sub(since).Seconds())
				// Stalled since the later of its last progress and the first sight of a message
				// it has not applied: a partition idle for long is not stuck the moment a
				// message arrives, before its next batch could apply it.
				if len(p.marks) > 0 && p.marks[0].at.After(progress) {
					progress = p.marks[0].at
				}
				if now.Sub(progress) > stall {
					st.Stuck = true
					why = fmt.Sprintf("%d messages behind on %s/%d with nothing applied for %s", lag, k.topic, k.partition,
						now.Sub(progress).Round(time.Second))
				}
			}
			if !p.failingSince.IsZero() {
				st.Failing = true
				if st.FailingSince.IsZero() || p.failingSince.Before(st.FailingSince) {
					st.FailingSince, st.LastError = p.failingSince, p.lastErr
				}
				if now.Sub(p.failingSince) > stall {
					st.Stuck = true
					why = fmt.Sprintf("failing on %s/%d for %s: %s", k.topic, k.partition, now.Sub(p.failingSince).Round(time.Second), p.lastErr)
				}
			}
		}
		if cs.disconnected != nil {
			st.Disconnected = cs.disconnected.Error()
			if now.Sub(cs.discSince) > stall {
				st.Stuck = true
				why = fmt.Sprintf("cannot consume for %s: %v", now.Sub(cs.discSince).Round(time.Second), cs.disconnected)
			}
		}
		st.StuckBecause = why
		out[name] = st
	}
	return out
}

type observer struct {
	c    *Consumers
	name string
}

func (o observer) with(f func(cs *consumer, now time.Time)) {
	now := o.c.now()
	o.c.mu.Lock()
	defer o.c.mu.Unlock()
	f(o.c.all[o.name], now)
}

func (o observer) Claimed(topic string, partition int32, next, highWater int64) {
	o.with(func(cs *consumer, now time.Time) {
		k := tp{topic, partition}
		cs.parts[k] = &partState{next: next, claimedAt: now}
		cs.disconnected = nil
		o.c.noteEnd(k, highWater, now)
	})
}

func (o observer) Released(topic string, partition int32) {
	o.with(func(cs *consumer, _ time.Time) { delete(cs.parts, tp{topic, partition}) })
}

func (o observer) Applied(topic string, partition int32, _ int, lastOffset int64, logTime time.Time, highWater int64) {
	o.with(func(cs *consumer, now time.Time) {
		k := tp{topic, partition}
		p := cs.parts[k]
		if p == nil {
			p = &partState{claimedAt: now}
			cs.parts[k] = p
		}
		p.appliedAt, p.logTime, p.failingSince, p.lastErr = now, logTime, time.Time{}, ""
		p.applied(lastOffset + 1)
		cs.disconnected = nil
		o.c.noteEnd(k, max(highWater, lastOffset+1), now)
	})
}

func (o observer) Failed(topic string, partition int32, _ int, err error) {
	o.with(func(cs *consumer, now time.Time) {
		p := cs.parts[tp{topic, partition}]
		if p == nil {
			return
		}
		if p.failingSince.IsZero() {
			p.failingSince = now
		}
		p.lastErr = err.Error()
	})
}

func (o observer) Disconnected(err error) {
	o.with(func(cs *consumer, now time.Time) {
		if cs.disconnected == nil {
			cs.discSince = now
		}
		cs.disconnected = err
	})
}

func (o observer) Parked(p batch.Parked) {
	o.with(func(cs *consumer, _ time.Time) {
		cs.parked++
		cs.lastParked = fmt.Sprintf("%s/%d offset %d: %v", p.Topic, p.Partition, p.Offset, p.Err)
	})
	if o.c.onParked != nil {
		o.c.onParked(o.name, p.Topic)
	}
}
