package app

import (
	"errors"
	"sync"

	"tradesvc/gateway/streams"
	"tradesvc/projections"
)

// streamsConfig carries the configured stream settings to the gateway's streams.
func (a *App) streamsConfig() streams.Config {
	s := a.cfg.Streams
	return streams.Config{PingInterval: s.PingInterval, PongTimeout: s.PongTimeout, Lifetime: s.Lifetime,
		MaxConns: s.MaxConns, MaxConnsPerAddr: s.MaxConnsPerAddr, SendQueue: s.SendQueue, WriteTimeout: s.WriteTimeout,
		DepthSymbols: s.DepthSymbols, ListenKeyLifetime: s.ListenKeyLifetime, UserRecheck: s.UserRecheck}
}

// streamChanges gives the user streams the projection change feed in the gateway's own
// terms (the gateway declares the port, it does not import projections).
type streamChanges struct{ feed *projections.ChangeFeed }

func (f streamChanges) Subscribe(match func(login int64) bool, buf int) streams.Subscription {
	s := &streamSub{src: f.feed.Subscribe(match, buf), c: make(chan streams.Change), done: make(chan struct{}),
		closed: make(chan struct{})}
	go s.pump()
	return s
}

// streamSub relays one subscription. Its own channel is unbuffered: the feed's buffer is the
// only one, so the lag rule (a full buffer ends the subscription) is the feed's.
type streamSub struct {
	src    *projections.Subscription
	c      chan streams.Change
	done   chan struct{}
	closed chan struct{}
	once   sync.Once
	err    error
}

func (s *streamSub) pump() {
	defer close(s.done)
	for {
		select {
		case ch := <-s.src.C():
			select {
			case s.c <- streams.Change{Seq: ch.Seq, Login: ch.Login, Kind: ch.Kind, OperationID: ch.OperationID,
				APIKeyID: ch.APIKeyID, ClientOrderID: ch.ClientOrderID, Event: ch.Event, CreatedAt: ch.CreatedAt}:
			case <-s.closed:
				return
			}
		case <-s.src.Done():
			// A stopped feed (shutdown) is not the subscriber's lag: only ErrLagged means
			// "you fell behind".
			if err := s.src.Err(); errors.Is(err, projections.ErrLagged) {
				s.err = err
			}
			return
		case <-s.closed:
			return
		}
	}
}

func (s *streamSub) C() <-chan streams.Change { return s.c }
func (s *streamSub) Done() <-chan struct{}    { return s.done }

// Err is read once Done is closed (pump wrote it before closing done).
func (s *streamSub) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

func (s *streamSub) Close() {
	s.once.Do(func() {
		s.src.Close()
		close(s.closed)
	})
}
