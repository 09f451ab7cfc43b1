package projections

import (
	"context"
	"fmt"
	"time"

	"tradesvc/events"
	"tradesvc/events/trading"
	"tradesvc/infra/kafka/batch"
	"tradesvc/infra/wait"
)

// The owner of a fact: the operation whose correlation tag a deal's or an order's comment
// carries, so that its change row (its DEAL or ORDER_UPDATE frame) carries C for the key that
// placed it. A relay fact can come before the operation that caused it is applied (their
// topics are consumed apart); it waits for it, briefly.

// awaitOwners holds a batch that carries a fresh fact of the relay whose tag names an
// operation this projection has not applied yet (its command or outcome is still on its way
// in another partition's batch) until that operation is applied, the fact is copied by an
// applied outcome, or it is too old to wait for (OwnerWait), before the batch joins a merged
// round that it would otherwise roll back. It wakes on each commit rather than polling.
func (t *Trading) awaitOwners(ctx context.Context, msgs []batch.Message) error {
	var lastRead time.Time
	for {
		committed := t.seen.nextCommit()
		read := t.cfg.Now().Sub(lastRead) >= ownerReadEvery
		pending, young, didRead, err := t.waitsForOwner(ctx, msgs, read)
		if didRead {
			lastRead = t.cfg.Now()
		}
		if err != nil || !pending {
			return err
		}
		step := ownerReadEvery // an old fact: read the read model again now and then
		if young {
			step = ownerInFlight
		}
		if err := wait.UntilOrFor(ctx, committed, step); err != nil {
			return err
		}
	}
}

// waitsForOwner reports whether msgs hold a fresh fact of the relay whose tag names an
// operation this projection has not applied, and whether such a fact is young (its command or
// outcome is surely on its way: no read). Tags of older facts unknown to this process are
// looked up in the read model (operations applied before it started, or by another process),
// when read allows (didRead says it did); otherwise they are waited for as unknown.
func (t *Trading) waitsForOwner(ctx context.Context, msgs []batch.Message, read bool) (wait, young, didRead bool, err error) {
	var unknown []loginTag
	var own map[loginTag]bool
	for _, m := range msgs {
		var k loginTag
		switch x := m.Event.(type) {
		case nil:
			continue // not decoded: a type the projection does not apply, a copy applied already
		case *events.ExecutionOutcome:
			k = loginTag{x.Login, x.Tag}
		case events.Command:
			h := x.OperationHeader()
			k = loginTag{h.Login, h.Tag}
		default:
			continue
		}
		if own == nil {
			own = map[loginTag]bool{}
		}
		own[k] = true
	}
	now := t.cfg.Now().UnixMilli()
	for _, m := range msgs {
		// The relay often appends its copy of the facts a send caused before the executor
		// appends the outcome that carries them in band. Applied first, the copy costs a
		// transaction of its own, and the outcome waits behind it. A young one waits for the
		// outcome instead (a moment: it is on its way), and is then skipped as applied.
		if k, ok := sentFact(m.Event); ok && !own[k] && m.Envelope.OccurredAt != 0 &&
			now-m.Envelope.OccurredAt < ownerInFlight.Milliseconds() && !t.seen.fact(m.Event) && !t.seen.outcome(k) {
			return true, true, false, nil
		}
	}
	for _, m := range msgs {
		k, ok := ownedFact(m.Event)
		if !ok || own[k] || m.Envelope.OccurredAt == 0 || now-m.Envelope.OccurredAt > t.cfg.OwnerWait.Milliseconds() ||
			t.seen.fact(m.Event) {
			continue
		}
		if _, ok := t.seen.owner(k); !ok {
			unknown = append(unknown, k)
			young = young || now-m.Envelope.OccurredAt < ownerInFlight.Milliseconds()
		}
	}
	if len(unknown) == 0 {
		return false, false, false, nil
	}
	if young {
		return true, true, false, nil // its command or outcome is on its way here: no read until it is late
	}
	if !read {
		return true, false, false, nil
	}
	logins, tags := make([]int64, len(unknown)), make([]string, len(unknown))
	for i, k := range unknown {
		logins[i], tags[i] = k.login, k.tag
	}
	rows, err := t.cfg.Pool.Query(ctx, tagOwnersSQL, logins, tags)
	if err != nil {
		return false, false, true, fmt.Errorf("resolve tags: %w", err)
	}
	found := map[loginTag]bool{}
	if err := scanTagOwners(rows, func(k loginTag, o tagOwner) {
		t.seen.learnOwner(k, o)
		found[k] = true
	}); err != nil {
		return false, false, true, err
	}
	return len(found) < len(unknown), false, true, nil
}

// ownedFact returns the (login, tag) of a fact whose change row names the operation that
// caused it: a trading deal, an order change of a pending order.
func ownedFact(ev events.Event) (loginTag, bool) {
	switch x := ev.(type) {
	case *events.PositionChanged:
		return loginTag{}, false
	case *events.OrderChanged:
		if trading.OrderType(x.Type).IsMarket() {
			return loginTag{}, false
		}
	}
	return sentFact(ev)
}

// sentFact returns the (login, tag) of a fact a send may have caused and carried in band: a
// trading deal, an order change, a position change whose comment holds the service's tag.
func sentFact(ev events.Event) (loginTag, bool) {
	var login int64
	var comment string
	switch x := ev.(type) {
	case *events.DealAdded:
		if !trading.DealAction(x.Action).IsTrade() {
			return loginTag{}, false
		}
		login, comment = x.Login, x.Comment
	case *events.OrderChanged:
		login, comment = x.Login, x.Comment
	case *events.PositionChanged:
		login, comment = x.Login, x.Comment
	default:
		return loginTag{}, false
	}
	tag := trading.TagOf(comment)
	return loginTag{login, tag}, tag != ""
}

// errOwnerPending rolls back a batch holding a fresh deal or order change whose tag names no
// operation the read model knows yet: the relay's copy of a fact overtook the command that
// caused it (their topics are consumed apart). It is applied again a moment later, once
// the command is in, so that its frame carries C for the key that placed it.
var errOwnerPending = fmt.Errorf("a fact came before its command: %w", batch.ErrRetrySoon)

// ownerReadEvery: a fact older than ownerInFlight whose tag is still unknown is looked up in
// the read model at most this often (each commit of this process wakes the wait, and under
// load there are many).
const ownerReadEvery = 100 * time.Millisecond

// ownerInFlight: a fact younger than this whose operation this process has not applied is
// waited for without reading the read model (the command or outcome that causes it is on its
// way); an older one is looked up (an operation applied before this process started).
const ownerInFlight = 250 * time.Millisecond

// ownerPending reports whether an applied fact of the relay carries a tag no known operation
// has, and is young enough to wait for it (younger than wait).
//
// How long a fact waits for its command (TradingConfig.OwnerWait): a tag still unknown after
// that is not the service's (a manual comment that looks like one), and the fact goes without
// C. The default, 10 s, is longer than the lags by which the trading projection's consumers fall
// behind one another under load (up to a few seconds, docs/benchmarks.md): with 2 s, about
// 0.2 % of the DEAL frames of an ACK run at 1,000 orders/s went without C. Only that
// partition's relay batch waits.
func ownerPending(items []*tradingItem, owners map[loginTag]tagOwner, now time.Time, wait time.Duration) bool {
	for _, it := range items {
		if !it.applied || it.inBand || it.at == 0 || now.UnixMilli()-it.at > wait.Milliseconds() {
			continue
		}
		if k, ok := ownedFact(it.ev); ok {
			if _, ok := owners[k]; !ok {
				return true
			}
		}
	}
	return false
}
