package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"time"

	"github.com/IBM/sarama"

	"tradesvc/events"
	"tradesvc/events/trading"
)

// Query says whose stories to tell: one login's client order id, every operation that
// placed, changed or filled an order ticket or a position ticket, or every operation
// received in a time range (optionally of one login).
type Query struct {
	Login         int64
	ClientOrderID string
	OrderID       int64
	PositionID    int64
	From, To      time.Time
}

// Validate accepts exactly one way of finding operations.
func (q Query) Validate() error {
	ways := 0
	if q.ClientOrderID != "" {
		ways++
		if q.Login == 0 {
			return errors.New("a client order id needs its login")
		}
	}
	if q.OrderID != 0 {
		ways++
	}
	if q.PositionID != 0 {
		ways++
	}
	if !q.From.IsZero() || !q.To.IsZero() {
		ways++
		if !q.From.IsZero() && !q.To.IsZero() && q.To.Before(q.From) {
			return errors.New("the time range ends before it starts")
		}
	}
	if ways != 1 {
		return errors.New("give one of: a login and a client order id, an order ticket, a position ticket, or a time range")
	}
	return nil
}

// Find reads the log for the operations q names and every record of their stories.
func Find(ctx context.Context, l *Log, q Query) ([]string, []Record, error) {
	if err := q.Validate(); err != nil {
		return nil, nil, err
	}
	w := wanted{ids: map[string]bool{}, tags: map[tagKey]bool{}}
	if err := l.findOperations(ctx, q, &w); err != nil {
		return nil, nil, err
	}
	if w.empty() {
		return nil, nil, nil
	}
	records, err := l.readStories(ctx, q, &w)
	if err != nil {
		return nil, nil, err
	}
	// Operations found by a tag only (a ticket's deals or orders) are named by their events.
	for _, r := range records {
		id := events.CorrelationOf(r.Event)
		if id == "" || w.ids[id] {
			continue
		}
		if t, ok := tagOfOperation(r.Event); ok && w.tags[t] {
			w.ids[id] = true
		}
	}
	ids := make([]string, 0, len(w.ids))
	for id := range w.ids {
		ids = append(ids, id)
	}
	first := map[string]Place{}
	for _, r := range records {
		if id := events.CorrelationOf(r.Event); id != "" {
			if p, ok := first[id]; !ok || before(r.Place, p) {
				first[id] = r.Place
			}
		}
	}
	sort.Slice(ids, func(i, j int) bool {
		pi, oki := first[ids[i]]
		pj, okj := first[ids[j]]
		if oki != okj {
			return oki
		}
		if pi.Timestamp != pj.Timestamp {
			return pi.Timestamp < pj.Timestamp
		}
		return ids[i] < ids[j]
	})
	return ids, records, nil
}

// wanted is what the second pass keeps: operations by id, and by login and tag.
type wanted struct {
	ids    map[string]bool
	tags   map[tagKey]bool
	logins map[int64]bool
}

func (w *wanted) empty() bool { return len(w.ids) == 0 && len(w.tags) == 0 }

func (w *wanted) login(l int64) {
	if w.logins == nil {
		w.logins = map[int64]bool{}
	}
	w.logins[l] = true
}

func (w *wanted) loginList() []int64 {
	out := make([]int64, 0, len(w.logins))
	for l := range w.logins {
		out = append(out, l)
	}
	return out
}

// tagOfOperation is the login and tag of a command or execution event.
func tagOfOperation(e events.Event) (tagKey, bool) {
	switch x := e.(type) {
	case *events.ExecutionOutcome:
		return tagKey{x.Login, x.Tag}, true
	case *events.ExecutionSent:
		return tagKey{x.Login, x.Tag}, true
	case interface{ OperationHeader() *events.Operation }:
		h := x.OperationHeader()
		return tagKey{h.Login, h.Tag}, true
	}
	return tagKey{}, false
}

// findOperations is the first pass: the operations q names. A client order id is looked for
// in its login's partition of the commands topic; a ticket in every partition of the three
// topics (the ticket's digits must appear in a record before it is decoded); a time range in
// the commands appended within it.
func (l *Log) findOperations(ctx context.Context, q Query, w *wanted) error {
	commands := l.topic(events.TopicCommands().Name)
	switch {
	case q.ClientOrderID != "":
		parts, err := l.partitionsOf(commands, []int64{q.Login})
		if err != nil {
			return err
		}
		needle := []byte(`"clientOrderId":"` + q.ClientOrderID + `"`)
		key := []byte(strconv.FormatInt(q.Login, 10))
		recs, err := l.scan(ctx, commands, parts, window{}, func(m *sarama.ConsumerMessage) bool {
			return bytes.Equal(m.Key, key) && bytes.Contains(m.Value, needle)
		})
		if err != nil {
			return err
		}
		for _, r := range recs {
			h, ok := r.Event.(interface{ OperationHeader() *events.Operation })
			if !ok || h.OperationHeader().ClientOrderID != q.ClientOrderID || h.OperationHeader().Login != q.Login {
				continue
			}
			w.ids[h.OperationHeader().OperationID] = true
			if sw, ok := r.Event.(*events.SweepRequested); ok {
				for _, leg := range sw.Legs {
					w.ids[leg.OperationID] = true
				}
			}
		}
		w.login(q.Login)
	case q.OrderID != 0 || q.PositionID != 0:
		return l.findByTicket(ctx, q, w)
	default:
		var logins []int64
		if q.Login != 0 {
			logins = []int64{q.Login}
		}
		parts, err := l.partitionsOf(commands, logins)
		if err != nil {
			return err
		}
		key := []byte(strconv.FormatInt(q.Login, 10))
		recs, err := l.scan(ctx, commands, parts, window{q.From, q.To}, func(m *sarama.ConsumerMessage) bool {
			return q.Login == 0 || bytes.Equal(m.Key, key)
		})
		if err != nil {
			return err
		}
		for _, r := range recs {
			if h, ok := r.Event.(interface{ OperationHeader() *events.Operation }); ok {
				w.ids[h.OperationHeader().OperationID] = true
				w.login(h.OperationHeader().Login)
			}
		}
	}
	return nil
}

// findByTicket finds the operations of an order or position ticket: the commands that
// target it, the outcomes that name it, and the tags of the deals, orders and positions that
// carry it.
func (l *Log) findByTicket(ctx context.Context, q Query, w *wanted) error {
	ticket := q.OrderID + q.PositionID // one of them is zero
	digits := []byte(strconv.FormatInt(ticket, 10))
	var logins []int64
	if q.Login != 0 {
		logins = []int64{q.Login}
	}
	for _, t := range []events.Topic{events.TopicCommands(), events.TopicExecutions(), events.TopicTrades()} {
		topic := l.topic(t.Name)
		parts, err := l.partitionsOf(topic, logins)
		if err != nil {
			return err
		}
		recs, err := l.scan(ctx, topic, parts, window{}, func(m *sarama.ConsumerMessage) bool {
			return bytes.Contains(m.Value, digits)
		})
		if err != nil {
			return err
		}
		for _, r := range recs {
			if q.Login != 0 && loginOf(r.Event) != q.Login {
				continue
			}
			if id, tag, ok := namesTicket(r.Event, q.OrderID, q.PositionID); ok {
				if id != "" {
					w.ids[id] = true
				}
				if tag.tag != "" {
					w.tags[tag] = true
				}
				w.login(tag.login)
			}
		}
	}
	return nil
}

// namesTicket reports whether e concerns the order or position ticket, with the operation
// id it names (commands, outcomes) or the login and tag it carries (trade-server facts).
func namesTicket(e events.Event, order, position int64) (string, tagKey, bool) {
	match := func(o, p int64) bool { return order != 0 && o == order || position != 0 && p == position }
	switch x := e.(type) {
	case *events.OrderModifyRequested:
		return x.OperationID, tagKey{x.Login, x.Tag}, match(x.OrderID, 0)
	case *events.OrderCancelRequested:
		return x.OperationID, tagKey{x.Login, x.Tag}, match(x.OrderID, 0)
	case *events.PositionCloseRequested:
		return x.OperationID, tagKey{x.Login, x.Tag}, match(0, x.PositionID)
	case *events.PositionModifyRequested:
		return x.OperationID, tagKey{x.Login, x.Tag}, match(0, x.PositionID)
	case *events.ExecutionOutcome:
		return x.OperationID, tagKey{x.Login, x.Tag}, match(x.OrderID, x.Position)
	case *events.DealAdded:
		return "", tagKey{x.Login, trading.TagOf(x.Comment)}, match(x.OrderID, x.PositionID)
	case *events.OrderChanged:
		return "", tagKey{x.Login, trading.TagOf(x.Comment)}, match(x.OrderID, x.PositionID)
	case *events.PositionChanged:
		return "", tagKey{x.Login, trading.TagOf(x.Comment)}, match(0, x.PositionID)
	}
	return "", tagKey{}, false
}

func loginOf(e events.Event) int64 {
	if t, ok := tagOfOperation(e); ok {
		return t.login
	}
	switch x := e.(type) {
	case *events.DealAdded:
		return x.Login
	case *events.OrderChanged:
		return x.Login
	case *events.PositionChanged:
		return x.Login
	}
	return 0
}

// readStories is the second pass, in the partitions of the operations' logins: every
// command and execution record of a wanted operation (by correlation id or tag), which also
// gives the tags of the operations found by id; then every deal carrying a wanted tag. A
// time range reads from its start: nothing of an operation received in it comes before.
func (l *Log) readStories(ctx context.Context, q Query, w *wanted) ([]Record, error) {
	for t := range w.tags {
		w.login(t.login)
	}
	from := window{from: q.From}
	var out []Record
	for _, t := range []events.Topic{events.TopicCommands(), events.TopicExecutions()} {
		tags := tagsByLogin(w.tags)
		recs, err := l.scanLogins(ctx, t, w.loginList(), from, func(m *sarama.ConsumerMessage) bool {
			if w.ids[stringField(m.Value, "correlationId")] {
				return true
			}
			tag := stringField(m.Value, "tag")
			return tag != "" && tags[string(m.Key)][tag]
		})
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	for _, r := range out {
		if t, ok := tagOfOperation(r.Event); ok && w.ids[events.CorrelationOf(r.Event)] {
			w.tags[t] = true
		}
	}
	tags := tagsByLogin(w.tags)
	recs, err := l.scanLogins(ctx, events.TopicTrades(), w.loginList(), from, func(m *sarama.ConsumerMessage) bool {
		tag := trading.TagOf(stringField(m.Value, "comment"))
		return tag != "" && tags[string(m.Key)][tag]
	})
	if err != nil {
		return nil, err
	}
	return append(out, recs...), nil
}

// scanLogins scans the partitions of topic t that hold logins.
func (l *Log) scanLogins(ctx context.Context, t events.Topic, logins []int64, w window,
	keep func(m *sarama.ConsumerMessage) bool) ([]Record, error) {
	topic := l.topic(t.Name)
	parts, err := l.partitionsOf(topic, logins)
	if err != nil {
		return nil, err
	}
	recs, err := l.scan(ctx, topic, parts, w, keep)
	if err != nil {
		return nil, fmt.Errorf("audit: read %s: %w", topic, err)
	}
	return recs, nil
}

// tagsByLogin indexes tags by the login's text (the records' Kafka key).
func tagsByLogin(tags map[tagKey]bool) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for t := range tags {
		k := strconv.FormatInt(t.login, 10)
		if out[k] == nil {
			out[k] = map[string]bool{}
		}
		out[k][t.tag] = true
	}
	return out
}
