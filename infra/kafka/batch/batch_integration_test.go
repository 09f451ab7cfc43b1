package batch_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/postgres"
	"tradesvc/infra/testenv"
)

// btEnv is one test's topic (multi-partition, own prefix) and publisher.
type btEnv struct {
	t     *testing.T
	ctx   context.Context
	kcfg  kafka.Config
	topic events.Topic
	pub   *kafka.Publisher
	dlq   *dlqRecorder
}

// dlqRecorder is a DeadLetterer that keeps what was parked.
type dlqRecorder struct {
	mu     sync.Mutex
	parked []batch.Parked
}

func (d *dlqRecorder) Park(_ context.Context, p batch.Parked) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.parked = append(d.parked, p)
	return nil
}

func (d *dlqRecorder) snapshot() []batch.Parked {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]batch.Parked(nil), d.parked...)
}

func ensure(e *btEnv) error {
	return kafka.EnsureTopics(e.ctx, e.kcfg, []events.Topic{e.topic})
}

func btSetup(t *testing.T, partitions int32) *btEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	e := &btEnv{t: t, ctx: ctx, dlq: &dlqRecorder{}, topic: events.Topic{Name: "batchtest.v1", Partitions: partitions, KeyedBy: "symbol", RetentionMs: -1}}
	e.kcfg = kafka.Config{Brokers: testenv.Brokers(t), TopicPrefix: testenv.TopicPrefix(t), ClientID: "batch-test"}
	if err := kafka.EnsureTopics(ctx, e.kcfg, []events.Topic{e.topic}); err != nil {
		t.Fatal(err)
	}
	pub, err := kafka.NewPublisher(e.kcfg, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	e.pub = pub
	return e
}

// tick builds the test's event: a TickReceived whose Symbol is the key and Seq the
// per-key sequence, so order per key is checkable.
func tick(key string, seq int) events.Event {
	return &events.TickReceived{Seq: uint64(seq), Symbol: key, Bid: dec.MustParse("1.1"), Ask: dec.MustParse("1.2"), Time: int64(seq)}
}

// rawMsg is a message to publish: value and key.
type rawMsg struct {
	key   string
	value []byte
}

func envelopeMsg(t *testing.T, ev events.Event) rawMsg {
	t.Helper()
	env, err := events.Wrap(ev, time.Now(), "", "", "batch-test")
	if err != nil {
		t.Fatal(err)
	}
	b, err := env.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return rawMsg{key: env.Key, value: b}
}

// publish appends msgs in one batch (order per key kept).
func (e *btEnv) publish(msgs ...rawMsg) {
	e.t.Helper()
	out := make([]*message.Message, len(msgs))
	for i, m := range msgs {
		out[i] = kafka.WithKey(message.NewMessage(events.NewID(), m.value), m.key)
	}
	if err := e.pub.PublishBatch(e.topic.Name, out...); err != nil {
		e.t.Fatal(err)
	}
}

func (e *btEnv) runConfig(maxBatch int) batch.Config {
	return batch.Config{Brokers: e.kcfg.Brokers, Group: e.kcfg.Topic("batchtest-projection"),
		Topics: []string{e.kcfg.Topic(e.topic.Name)}, MaxBatch: maxBatch, MaxWait: 20 * time.Millisecond,
		Sarama: e.kcfg.ConsumerConfig(), Logger: testenv.Logger(), DeadLetter: e.dlq}
}

// run starts batch.Run; the returned function cancels it and waits until it has returned.
func (e *btEnv) run(cfg batch.Config, h batch.Handler) (stop func()) {
	return testenv.Background(e.t, e.ctx, 15*time.Second, func(ctx context.Context) error { return batch.Run(ctx, cfg, h) })
}

// projection is an idempotent read side in Postgres: one row per event id, and per key the
// last applied seq. It records every order violation (a seq applied after a gap) it sees.
type projection struct {
	pool *pgxpool.Pool

	mu         sync.Mutex
	calls      [][]batch.Message // every handler call, in call order
	violations []string
	unknown    []batch.Message // messages handed over with Event == nil
	failOnce   func([]batch.Message) bool
	failed     []batch.Message // the batch that was failed
	failedCall int             // its index in calls
	slow       time.Duration
}

func newProjection(t *testing.T, ctx context.Context) *projection {
	t.Helper()
	url, _ := testenv.PGSchema(t)
	pool, err := postgres.Open(ctx, postgres.Config{URL: url, MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, `CREATE TABLE applied (event_id text PRIMARY KEY, key text NOT NULL, seq int NOT NULL);
		CREATE TABLE last_seq (key text PRIMARY KEY, seq int NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return &projection{pool: pool}
}

func (p *projection) handle(ctx context.Context, msgs []batch.Message) error {
	p.mu.Lock()
	p.calls = append(p.calls, msgs)
	fail := p.failOnce != nil && p.failed == nil && p.failOnce(msgs)
	if fail {
		p.failed = msgs
		p.failedCall = len(p.calls) - 1
	}
	slow := p.slow
	p.mu.Unlock()
	if fail {
		return errors.New("injected failure")
	}
	if slow > 0 {
		time.Sleep(slow)
	}
	tx, err := p.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.Background())
	var violations []string
	for _, m := range msgs {
		if m.Event == nil {
			p.mu.Lock()
			p.unknown = append(p.unknown, m)
			p.mu.Unlock()
			continue
		}
		tk, ok := m.Event.(*events.TickReceived)
		if !ok {
			return fmt.Errorf("unexpected %T", m.Event)
		}
		var last int
		err := tx.QueryRow(ctx, `SELECT seq FROM last_seq WHERE key = $1`, tk.Symbol).Scan(&last)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		seq := int(tk.Seq)
		if seq <= last {
			continue // a redelivery: already applied
		}
		if seq != last+1 {
			violations = append(violations, fmt.Sprintf("%s: seq %d applied after %d (partition %d offset %d)", tk.Symbol, seq, last, m.Partition, m.Offset))
		}
		if _, err := tx.Exec(ctx, `INSERT INTO applied (event_id, key, seq) VALUES ($1, $2, $3) ON CONFLICT (event_id) DO NOTHING`,
			m.Envelope.ID, tk.Symbol, seq); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO last_seq (key, seq) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET seq = EXCLUDED.seq`,
			tk.Symbol, seq); err != nil {
			return err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	p.violations = append(p.violations, violations...)
	p.mu.Unlock()
	return nil
}

func (p *projection) appliedCount(ctx context.Context) int {
	var n int
	if err := p.pool.QueryRow(ctx, `SELECT count(*) FROM applied`).Scan(&n); err != nil {
		return -1
	}
	return n
}

func (p *projection) waitApplied(t *testing.T, ctx context.Context, n int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for p.appliedCount(ctx) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d events applied within %s", p.appliedCount(ctx), n, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *projection) delivered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.calls {
		n += len(c)
	}
	return n
}

// A failed batch is retried (the same messages come again, from the same offset), nothing
// after it is skipped; a consumer cancelled mid-way and a new one in the same group together
// apply every event exactly once in per-key order; an unknown event type arrives with Event
// nil, and a message that is not an envelope is parked in the dead-letter topic, with its
// bytes and error, without stopping the consumer.
func TestRunRetriesResumesAndParksWhatItCannotRead(t *testing.T) {
	e := btSetup(t, 4)
	p := newProjection(t, e.ctx)
	const keys, perKey = 8, 30
	key := func(k int) string { return fmt.Sprintf("K%02d", k) }
	// First half: seq 1..perKey/2 of every key, interleaved.
	var first []rawMsg
	for s := 1; s <= perKey/2; s++ {
		for k := range keys {
			first = append(first, envelopeMsg(t, tick(key(k), s)))
		}
	}
	e.publish(first...)

	// Fail the first batch that holds K03 seq 5, once.
	p.failOnce = func(msgs []batch.Message) bool {
		for _, m := range msgs {
			if tk, ok := m.Event.(*events.TickReceived); ok && tk.Symbol == "K03" && tk.Seq == 5 {
				return true
			}
		}
		return false
	}
	p.slow = 40 * time.Millisecond
	cfg := e.runConfig(6)
	stop := e.run(cfg, p.handle)
	p.waitApplied(t, e.ctx, 40, 20*time.Second)
	stop() // mid-way: the first half is not all applied yet (the handler is slow)
	afterFirst := p.appliedCount(e.ctx)
	deliveredFirst := p.delivered()
	if afterFirst >= len(first) {
		t.Logf("note: the first consumer applied all %d events before it was cancelled", afterFirst)
	}

	// Second half, with an event type this build does not know and a message that is not
	// an envelope in the middle of K05's partition.
	unknown := events.Envelope{ID: events.NewID(), Type: "FutureThing_v9", OccurredAt: time.Now().UnixMilli(), Key: key(5), Payload: []byte(`{"x":1}`)}
	unknownRaw, err := unknown.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var second []rawMsg
	for s := perKey/2 + 1; s <= perKey; s++ {
		for k := range keys {
			if k == 5 && s == perKey/2+3 {
				second = append(second, rawMsg{key: key(5), value: []byte("this is not an envelope")})
				second = append(second, rawMsg{key: key(5), value: unknownRaw})
			}
			second = append(second, envelopeMsg(t, tick(key(k), s)))
		}
	}
	e.publish(second...)
	p.mu.Lock()
	p.slow = 0
	p.mu.Unlock()
	e.run(cfg, p.handle) // a new consumer in the same group
	total := keys * perKey
	p.waitApplied(t, e.ctx, total, 20*time.Second)
	// Let any stray redelivery land before looking at the read side.
	time.Sleep(200 * time.Millisecond)

	var rows, distinct int
	if err := p.pool.QueryRow(e.ctx, `SELECT count(*), count(DISTINCT (key, seq)) FROM applied`).Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != total || distinct != total {
		t.Fatalf("read side holds %d rows (%d distinct key/seq), want each of %d events exactly once", rows, distinct, total)
	}
	perKeyRows, err := p.pool.Query(e.ctx, `SELECT key, count(*), min(seq), max(seq) FROM applied GROUP BY key ORDER BY key`)
	if err != nil {
		t.Fatal(err)
	}
	nKeys := 0
	for perKeyRows.Next() {
		var k string
		var c, lo, hi int
		if err := perKeyRows.Scan(&k, &c, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		nKeys++
		if c != perKey || lo != 1 || hi != perKey {
			t.Errorf("key %s: %d events, seq %d..%d; want 1..%d", k, c, lo, hi, perKey)
		}
	}
	perKeyRows.Close()
	if nKeys != keys {
		t.Errorf("%d keys in the read side, want %d", nKeys, keys)
	}

	deliveredSecond := p.delivered() - deliveredFirst
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.violations) > 0 {
		t.Errorf("per-key order broken: %v", p.violations)
	}
	// The failed batch came again: a later call of the same partition started at the same
	// offset and held the same messages.
	if p.failed == nil {
		t.Fatal("the batch holding K03 seq 5 was never handed over")
	}
	retried := false
	for _, c := range p.calls[p.failedCall+1:] {
		if len(c) == 0 {
			continue
		}
		if c[0].Partition == p.failed[0].Partition && c[0].Offset == p.failed[0].Offset {
			if len(c) < len(p.failed) {
				t.Errorf("retry of the failed batch holds %d messages, the batch had %d", len(c), len(p.failed))
			}
			retried = true
			break
		}
	}
	if !retried {
		t.Errorf("the failed batch (partition %d from offset %d) was not handed over again", p.failed[0].Partition, p.failed[0].Offset)
	}
	// Within each call offsets are contiguous-increasing and per partition calls never go
	// backwards except to redeliver unmarked work after the restart.
	for _, c := range p.calls {
		for i := 1; i < len(c); i++ {
			if c[i].Partition != c[0].Partition || c[i].Offset <= c[i-1].Offset {
				t.Errorf("a batch mixes partitions or is out of offset order: %d/%d after %d/%d", c[i].Partition, c[i].Offset, c[i-1].Partition, c[i-1].Offset)
			}
		}
	}
	// The second consumer resumed from committed offsets instead of starting over.
	if deliveredSecond >= len(first)+len(second) {
		t.Errorf("second consumer was handed %d messages, i.e. everything again; committed offsets ignored", deliveredSecond)
	}
	if afterFirst == 0 {
		t.Errorf("first consumer applied nothing")
	}
	// Unknown type: handed over with its envelope and Event nil.
	if len(p.unknown) == 0 {
		t.Fatal("the FutureThing_v9 envelope never reached the handler")
	}
	for _, m := range p.unknown {
		if m.Envelope.Type != "FutureThing_v9" || m.Envelope.ID != unknown.ID || m.Event != nil {
			t.Errorf("unknown-type message: %+v", m)
		}
	}
	// Not an envelope: never handed over, and the messages around it were (checked above:
	// every K05 seq applied). Its offset is the one just before the unknown envelope.
	garbage := p.unknown[0]
	for _, c := range p.calls {
		for _, m := range c {
			if m.Partition == garbage.Partition && m.Offset == garbage.Offset-1 {
				t.Errorf("the non-envelope message at %d/%d was handed over: %+v", m.Partition, m.Offset, m)
			}
		}
	}
	// It was parked, with where it came from and why.
	parked := e.dlq.snapshot()
	if len(parked) == 0 {
		t.Fatal("the non-envelope message was not parked")
	}
	for _, pk := range parked {
		if pk.Partition != garbage.Partition || pk.Offset != garbage.Offset-1 || string(pk.Value) != "this is not an envelope" ||
			string(pk.Key) != key(5) || pk.Group != cfg.Group || pk.Topic != e.kcfg.Topic(e.topic.Name) || pk.Err == nil || pk.Attempts != 0 {
			t.Errorf("parked %+v (err %v), want the non-envelope message of %s/%d offset %d", pk, pk.Err, garbage.Topic, garbage.Partition, garbage.Offset-1)
		}
	}
}

// Tail starts each partition Backfill messages before its newest (or at its oldest when it
// holds fewer), delivers them in order, then delivers what is appended afterwards.
func TestTailBackfillsThenFollows(t *testing.T) {
	e := btSetup(t, 3)
	const backfill = 4
	var msgs []rawMsg
	ids := map[string]bool{}
	for s := 1; s <= 6; s++ {
		for _, k := range []string{"A", "B", "C", "D", "E"} {
			m := envelopeMsg(t, tick(k, s))
			msgs = append(msgs, m)
		}
	}
	e.publish(msgs...)
	for _, m := range msgs {
		env, _ := events.UnmarshalEnvelope(m.value)
		ids[env.ID] = true
	}

	client, err := sarama.NewClient(e.kcfg.Brokers, e.kcfg.ConsumerConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	physical := e.kcfg.Topic(e.topic.Name)
	start := map[int32]int64{}
	newest := map[int32]int64{}
	for p := int32(0); p < e.topic.Partitions; p++ {
		n, err := client.GetOffset(physical, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		o, err := client.GetOffset(physical, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		newest[p] = n
		start[p] = max(n-backfill, o)
	}
	wantBackfill := 0
	for p := range newest {
		wantBackfill += int(newest[p] - start[p])
	}

	var mu sync.Mutex
	var got []batch.Message
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() {
		done <- batch.Tail(ctx, batch.TailConfig{Brokers: e.kcfg.Brokers, Topic: physical, Backfill: backfill, Sarama: e.kcfg.ConsumerConfig()},
			func(m batch.Message) {
				mu.Lock()
				got = append(got, m)
				mu.Unlock()
			})
	}()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Tail: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Tail did not return within 10s of cancellation")
		}
	}()
	waitLen := func(n int, what string) []batch.Message {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			mu.Lock()
			snap := append([]batch.Message(nil), got...)
			mu.Unlock()
			if len(snap) >= n {
				return snap
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d messages within 15s", what, len(snap), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	snap := waitLen(wantBackfill, "backfill")
	byPart := map[int32][]int64{}
	for _, m := range snap {
		if !ids[m.Envelope.ID] {
			t.Errorf("backfill delivered an envelope that was not published: %+v", m.Envelope)
		}
		if _, ok := m.Event.(*events.TickReceived); !ok {
			t.Errorf("backfill message %d/%d decoded as %T", m.Partition, m.Offset, m.Event)
		}
		byPart[m.Partition] = append(byPart[m.Partition], m.Offset)
	}
	for p := range newest {
		offs := byPart[p]
		var want []int64
		for o := start[p]; o < newest[p]; o++ {
			want = append(want, o)
		}
		if fmt.Sprint(offs) != fmt.Sprint(want) {
			t.Errorf("partition %d backfill offsets %v, want %v (the last %d)", p, offs, want, backfill)
		}
	}

	// New messages after the backfill arrive too, in order per key.
	var later []rawMsg
	for s := 7; s <= 9; s++ {
		for _, k := range []string{"A", "B", "C", "D", "E"} {
			later = append(later, envelopeMsg(t, tick(k, s)))
		}
	}
	e.publish(later...)
	waitLen(wantBackfill+len(later), "new messages")
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	snap = append([]batch.Message(nil), got...)
	mu.Unlock()
	if len(snap) != wantBackfill+len(later) {
		t.Fatalf("Tail delivered %d messages, want %d backfilled + %d new", len(snap), wantBackfill, len(later))
	}
	lastSeq := map[string]uint64{}
	for _, m := range snap {
		tk := m.Event.(*events.TickReceived)
		if tk.Seq <= lastSeq[tk.Symbol] {
			t.Errorf("key %s: seq %d after %d", tk.Symbol, tk.Seq, lastSeq[tk.Symbol])
		}
		lastSeq[tk.Symbol] = tk.Seq
	}
	for _, k := range []string{"A", "B", "C", "D", "E"} {
		if lastSeq[k] != 9 {
			t.Errorf("key %s: last seq %d delivered, want 9", k, lastSeq[k])
		}
	}
}

// A handler that defers its batch's end (batch.Defer) lets the consumer go on with the next
// batch at once; batches are marked in their order once their deferred part succeeds, and a
// deferred part that fails makes the consumer start again from the last batch marked.
func TestDeferredBatchesAreMarkedInOrderAndRedeliveredWhenTheyFail(t *testing.T) {
	e := btSetup(t, 1)
	for i := 1; i <= 3; i++ {
		e.publish(envelopeMsg(t, tick("K", i)))
	}
	var mu sync.Mutex
	var seen []int64                // offsets handed over, in order
	dones := map[int64]chan error{} // the deferred part of each delivery, latest
	handed := make(chan int64, 64)
	h := func(ctx context.Context, msgs []batch.Message) error {
		done := make(chan error, 1)
		mu.Lock()
		for _, m := range msgs {
			seen = append(seen, m.Offset)
			dones[m.Offset] = done
		}
		mu.Unlock()
		if !batch.Defer(ctx, done) {
			t.Error("Defer refused inside a handler")
		}
		handed <- msgs[len(msgs)-1].Offset
		return nil
	}
	cfg := e.runConfig(1)
	stop := e.run(cfg, h)
	waitOffset := func(want int64) {
		t.Helper()
		for {
			select {
			case got := <-handed:
				if got == want {
					return
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("offset %d never handed over (seen %v)", want, seen)
			}
		}
	}
	// Every batch is handed over although none is finished: the consumer does not wait.
	waitOffset(2)
	doneOf := func(off int64) chan error {
		mu.Lock()
		defer mu.Unlock()
		return dones[off]
	}
	doneOf(0) <- nil
	doneOf(1) <- errors.New("append failed")
	doneOf(2) <- nil
	// Offset 0 was marked; 1 failed, so the next session starts from it again.
	waitOffset(1)
	waitOffset(2)
	doneOf(1) <- nil
	doneOf(2) <- nil
	time.Sleep(500 * time.Millisecond) // the marks are committed on the way out
	stop()
	mu.Lock()
	first := append([]int64(nil), seen...)
	mu.Unlock()
	if first[0] != 0 || first[1] != 1 || first[2] != 2 {
		t.Fatalf("first session handed over %v", first)
	}
	for _, off := range first[3:] {
		if off == 0 {
			t.Fatalf("offset 0 redelivered although its batch succeeded and was marked: %v", first)
		}
	}
	// A new session after a clean stop finds everything marked.
	mu.Lock()
	seen = nil
	mu.Unlock()
	stop = e.run(cfg, h)
	e.publish(envelopeMsg(t, tick("K", 4)))
	waitOffset(3)
	doneOf(3) <- nil
	stop()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != 3 {
		t.Fatalf("after a clean stop the next session handed over %v, want only the new offset 3", seen)
	}
}

// BackfillFor starts each partition at its first message of that long ago when that is
// earlier than Backfill messages before its newest (a reader resuming from a store that
// lags the topic by more than Backfill messages), and changes nothing when no message is
// that recent.
func TestTailBackfillsByTime(t *testing.T) {
	e := btSetup(t, 3)
	var msgs []rawMsg
	for s := 1; s <= 6; s++ {
		for _, k := range []string{"A", "B", "C", "D", "E"} {
			msgs = append(msgs, envelopeMsg(t, tick(k, s)))
		}
	}
	e.publish(msgs...)
	physical := e.kcfg.Topic(e.topic.Name)
	tail := func(cfg batch.TailConfig, want int) []batch.Message {
		t.Helper()
		cfg.Brokers, cfg.Topic, cfg.Sarama = e.kcfg.Brokers, physical, e.kcfg.ConsumerConfig()
		var mu sync.Mutex
		var got []batch.Message
		ctx, cancel := context.WithCancel(e.ctx)
		done := make(chan error, 1)
		go func() {
			done <- batch.Tail(ctx, cfg, func(m batch.Message) {
				mu.Lock()
				got = append(got, m)
				mu.Unlock()
			})
		}()
		deadline := time.Now().Add(15 * time.Second)
		for {
			mu.Lock()
			n := len(got)
			mu.Unlock()
			if n >= want || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond) // nothing more arrives
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Tail: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		return got
	}
	// Every message is within the hour: all of them, although Backfill asks for one a partition.
	all := tail(batch.TailConfig{Backfill: 1, BackfillFor: time.Hour}, len(msgs))
	if len(all) != len(msgs) {
		t.Errorf("BackfillFor 1h: %d messages, want all %d", len(all), len(msgs))
	}
	used := map[int32]bool{} // the partitions the keys went to
	for _, m := range all {
		used[m.Partition] = true
	}
	// No message is a nanosecond old: Backfill decides (the newest of each partition).
	got := tail(batch.TailConfig{Backfill: 1, BackfillFor: time.Nanosecond}, len(used))
	parts := map[int32]int{}
	for _, m := range got {
		parts[m.Partition]++
	}
	if len(got) != len(used) || len(parts) != len(used) {
		t.Errorf("BackfillFor 1ns: %d messages over partitions %v, want the newest of each of %d", len(got), parts, len(used))
	}
}
