package command

import (
	"context"
	"errors"
	"testing"
	"time"

	"tradesvc/events"
)

// heldAppender is a log whose appends return only when the test releases them, with the
// error it gives; each append reports whether its context was ended meanwhile.
type heldAppender struct {
	release chan error
	ended   chan bool // one per append: was its context done when it was released?
}

func (h heldAppender) Wrap(...events.Event) ([]events.Envelope, error) { return nil, nil }

func (h heldAppender) AppendEnvelopes(ctx context.Context, _ events.Topic, _ ...events.Envelope) error {
	err := <-h.release
	h.ended <- ctx.Err() != nil
	return err
}

// A request waits for its command's append at most the bound, or until its own context ends,
// and is then told the append failed (the handlers answer -5009 and keep the record open),
// while the append goes on, on a context that the request's end does not cancel. An append
// acknowledged in time answers with what the log said.
func TestARequestWaitsForItsAppendAtMostTheBound(t *testing.T) {
	ctx := context.Background()
	h := heldAppender{release: make(chan error), ended: make(chan bool, 1)}
	log := &boundedLog{Appender: h, wait: 20 * time.Millisecond, now: time.Now}

	// The log does not answer within the bound.
	err := log.AppendEnvelopes(ctx, events.TopicCommands())
	if !errors.Is(err, errAppendUnacknowledged) {
		t.Fatalf("an append held past the bound returned %v, want errAppendUnacknowledged", err)
	}
	h.release <- nil // the append was still waiting for the log: it goes on after the answer
	if <-h.ended {
		t.Fatal("the background append's context was ended")
	}

	// The request's context ends first.
	log.wait = time.Hour
	rctx, cancel := context.WithCancelCause(ctx)
	gone := errors.New("client went away")
	errc := make(chan error, 1)
	go func() { errc <- log.AppendEnvelopes(rctx, events.TopicCommands()) }()
	cancel(gone)
	if err := <-errc; !errors.Is(err, gone) {
		t.Fatalf("an append whose request ended returned %v, want the request's cause", err)
	}
	h.release <- nil
	if <-h.ended {
		t.Fatal("the request's end cancelled its append")
	}

	// The log answers in time: its answer, failure or not, is the append's.
	refused := errors.New("broker refused")
	for _, want := range []error{nil, refused} {
		errc := make(chan error, 1)
		go func() { errc <- log.AppendEnvelopes(ctx, events.TopicCommands()) }()
		h.release <- want
		<-h.ended
		if err := <-errc; !errors.Is(err, want) || (want == nil && err != nil) {
			t.Fatalf("an append the log answered with %v returned %v", want, err)
		}
	}
}

// failingAppender answers every append with err (nil: acknowledged).
type failingAppender struct{ err *error }

func (f failingAppender) Wrap(...events.Event) ([]events.Envelope, error) { return nil, nil }

func (f failingAppender) AppendEnvelopes(context.Context, events.Topic, ...events.Envelope) error {
	return *f.err
}

// After an append fails, new operations are refused (before anything is recorded) except one
// a second, whose append tells whether the log is back; an acknowledged append ends it.
func TestAFailedLogIsTriedAgainOnceASecond(t *testing.T) {
	ctx := context.Background()
	at := time.Unix(1_800_000_000, 0)
	var err error
	log := &boundedLog{Appender: failingAppender{&err}, wait: time.Hour, now: func() time.Time { return at }}
	if log.refusing() {
		t.Fatal("a log that never failed is refused")
	}
	err = errors.New("broker down")
	if got := log.AppendEnvelopes(ctx, events.TopicCommands()); !errors.Is(got, err) {
		t.Fatalf("append returned %v", got)
	}
	for _, d := range []time.Duration{0, 500 * time.Millisecond, 999 * time.Millisecond} {
		at = time.Unix(1_800_000_000, 0).Add(d)
		if !log.refusing() {
			t.Fatalf("%v after the failure a new operation is let through", d)
		}
	}
	at = time.Unix(1_800_000_001, 0)
	if log.refusing() {
		t.Fatal("a second after the failure, no operation is let through to try the log")
	}
	if !log.refusing() {
		t.Fatal("a second operation is let through in the same second")
	}
	// The probe fails too: the next one goes a second later.
	if got := log.AppendEnvelopes(ctx, events.TopicCommands()); got == nil {
		t.Fatal("the failing append succeeded")
	}
	at = at.Add(999 * time.Millisecond)
	if !log.refusing() {
		t.Fatal("an operation is let through within a second of the last probe")
	}
	at = at.Add(time.Millisecond)
	if log.refusing() {
		t.Fatal("no probe a second after the last one")
	}
	err = nil // the log is back: the probe's append is acknowledged
	if got := log.AppendEnvelopes(ctx, events.TopicCommands()); got != nil {
		t.Fatalf("append returned %v", got)
	}
	for range 3 {
		if log.refusing() {
			t.Fatal("a new operation is refused after the log acknowledged an append")
		}
	}
}
