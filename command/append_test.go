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
	log := boundedLog{Appender: h, wait: 20 * time.Millisecond}

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
