package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"

	"tradesvc/infra/mt5"
	"tradesvc/infra/wait"
)

// The journal is the simulator's durable state: one JSON record per line, each either a
// trade fact (a full snapshot of the deal, order, position or account it describes) or a
// meta record (bookkeeping such as the last rollover day). Replaying it in order rebuilds
// every position, order, deal, balance and ticket counter. Writes are group-committed: the
// engine queues records under its lock, one writer goroutine appends whatever has queued,
// fsyncs once for the whole batch, and only then makes the facts visible and wakes the
// senders waiting on them.

type record struct {
	Fact *mt5.Fact `json:"f,omitempty"`
	Meta *meta     `json:"m,omitempty"`
}

type meta struct {
	RolloverDay int64 `json:"rolloverDay,omitempty"`
}

type idxEntry struct {
	seq uint64
	off int64
}

const indexEvery = 256

type journal struct {
	path string
	f    *os.File
	sync SyncMode

	mu       sync.Mutex
	queue    []record
	kick     chan struct{}
	durable  uint64
	waitCh   chan struct{}
	window   []mt5.Fact // ring of the newest facts
	winCap   int
	winStart uint64 // seq of window[0] in logical order
	index    []idxEntry
	off      int64
	err      error
	done     bool
}

// scanJournal reads every complete record of path, calling fn for each, and returns the
// offset just past the last complete record and a sparse seq->offset index.
func scanJournal(path string, fn func(record) error) (int64, []idxEntry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, fmt.Errorf("sim journal: %w", err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var off int64
	var idx []idxEntry
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// a torn last line (crash mid-write) is dropped: its batch was never acknowledged
			return off, idx, nil
		}
		if err != nil {
			return 0, nil, fmt.Errorf("sim journal: %w", err)
		}
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			return off, idx, nil
		}
		if rec.Fact != nil && rec.Fact.Seq%indexEvery == 1 {
			idx = append(idx, idxEntry{rec.Fact.Seq, off})
		}
		if err := fn(rec); err != nil {
			return 0, nil, err
		}
		off += int64(len(line))
	}
}

func openJournal(path string, mode SyncMode, window int, lastSeq uint64, end int64, idx []idxEntry) (*journal, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("sim journal: %w", err)
	}
	if err := f.Truncate(end); err != nil {
		f.Close()
		return nil, fmt.Errorf("sim journal: truncate torn tail: %w", err)
	}
	if _, err := f.Seek(end, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("sim journal: %w", err)
	}
	return &journal{path: path, f: f, sync: mode, kick: make(chan struct{}, 1), durable: lastSeq,
		waitCh: make(chan struct{}), winCap: window, window: make([]mt5.Fact, window), winStart: lastSeq + 1, index: idx, off: end}, nil
}

// enqueue hands records to the writer; the caller holds the engine lock, so queue order
// is sequence order.
func (j *journal) enqueue(recs []record) {
	j.mu.Lock()
	j.queue = append(j.queue, recs...)
	j.mu.Unlock()
	select {
	case j.kick <- struct{}{}:
	default:
	}
}

func (j *journal) run(ctx context.Context) {
	var buf []byte
	for {
		select {
		case <-ctx.Done():
			j.commit(&buf)
			return
		case <-j.kick:
			j.commit(&buf)
		}
	}
}

func (j *journal) commit(buf *[]byte) {
	j.mu.Lock()
	batch := j.queue
	j.queue = nil
	j.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	offs := make([]int64, len(batch))
	b := (*buf)[:0]
	for i := range batch {
		offs[i] = int64(len(b))
		b = appendRecord(b, &batch[i])
	}
	*buf = b
	if _, err := j.f.Write(b); err != nil {
		j.fail(fmt.Errorf("sim journal: write: %w", err))
		return
	}
	if j.sync == SyncBatch {
		if err := j.f.Sync(); err != nil {
			j.fail(fmt.Errorf("sim journal: fsync: %w", err))
			return
		}
	}
	j.mu.Lock()
	for i := range batch {
		f := batch[i].Fact
		if f == nil {
			continue
		}
		if f.Seq%indexEvery == 1 {
			j.index = append(j.index, idxEntry{f.Seq, j.off + offs[i]})
		}
		j.window[int(f.Seq%uint64(j.winCap))] = *f
		if f.Seq-j.winStart >= uint64(j.winCap) {
			j.winStart = f.Seq - uint64(j.winCap) + 1
		}
		j.durable = f.Seq
	}
	j.off += int64(len(b))
	close(j.waitCh)
	j.waitCh = make(chan struct{})
	j.mu.Unlock()
}

func (j *journal) fail(err error) {
	j.mu.Lock()
	if j.err == nil {
		j.err = err
	}
	close(j.waitCh)
	j.waitCh = make(chan struct{})
	j.mu.Unlock()
}

// waitDurable blocks until fact seq is on disk.
func (j *journal) waitDurable(ctx context.Context, seq uint64) error {
	for {
		j.mu.Lock()
		if j.durable >= seq {
			j.mu.Unlock()
			return nil
		}
		if j.err != nil || j.done {
			err := j.err
			j.mu.Unlock()
			if err == nil {
				err = mt5.ErrClosed
			}
			return err
		}
		ch := j.waitCh
		j.mu.Unlock()
		if err := wait.Until(ctx, ch); err != nil {
			return err
		}
	}
}

// read returns up to max durable facts after seq, blocking until one exists.
func (j *journal) read(ctx context.Context, after uint64, max int) ([]mt5.Fact, error) {
	if max <= 0 {
		max = 1000
	}
	for {
		j.mu.Lock()
		if j.err != nil {
			err := j.err
			j.mu.Unlock()
			return nil, err
		}
		if after > j.durable {
			j.mu.Unlock()
			return nil, fmt.Errorf("%w: cursor %d, newest fact %d", mt5.ErrCursorAhead, after, j.durable)
		}
		if j.durable > after {
			if after+1 >= j.winStart {
				out := make([]mt5.Fact, 0, min(max, int(j.durable-after)))
				for s := after + 1; s <= j.durable && len(out) < max; s++ {
					out = append(out, j.window[int(s%uint64(j.winCap))])
				}
				j.mu.Unlock()
				return out, checkConsecutive(out, after)
			}
			idx := j.index
			durable := j.durable
			j.mu.Unlock()
			return j.readFile(after, max, durable, idx)
		}
		if j.done {
			j.mu.Unlock()
			return nil, mt5.ErrClosed
		}
		ch := j.waitCh
		j.mu.Unlock()
		if err := wait.Until(ctx, ch); err != nil {
			return nil, err
		}
	}
}

// checkConsecutive guards the ring arithmetic: a read must yield consecutive sequences.
func checkConsecutive(out []mt5.Fact, after uint64) error {
	for i := range out {
		if out[i].Seq != after+uint64(i)+1 {
			return fmt.Errorf("sim journal: fact window out of order at %d: %d", after+uint64(i)+1, out[i].Seq)
		}
	}
	return nil
}

func (j *journal) readFile(after uint64, max int, durable uint64, idx []idxEntry) ([]mt5.Fact, error) {
	i := sort.Search(len(idx), func(i int) bool { return idx[i].seq > after+1 })
	var start int64
	if i > 0 {
		start = idx[i-1].off
	}
	f, err := os.Open(j.path)
	if err != nil {
		return nil, fmt.Errorf("sim journal: %w", err)
	}
	defer f.Close()
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("sim journal: %w", err)
	}
	r := bufio.NewReaderSize(f, 1<<16)
	var out []mt5.Fact
	for len(out) < max {
		line, err := r.ReadBytes('\n')
		if err != nil {
			break
		}
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			return nil, fmt.Errorf("sim journal: decode: %w", err)
		}
		if rec.Fact == nil || rec.Fact.Seq <= after {
			continue
		}
		if rec.Fact.Seq > durable {
			break
		}
		out = append(out, *rec.Fact)
	}
	return out, nil
}

func (j *journal) close() error {
	j.mu.Lock()
	j.done = true
	close(j.waitCh)
	j.waitCh = make(chan struct{})
	j.mu.Unlock()
	if err := j.f.Sync(); err != nil {
		j.f.Close()
		return fmt.Errorf("sim journal: %w", err)
	}
	return j.f.Close()
}
