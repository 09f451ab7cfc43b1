// Package audit tells the story of client operations from the Kafka log alone (`tradesvc
// audit`): who asked for what and from where, when the gateway received and recorded it,
// where the log holds it (topic, partition, offset), when the executor sent it and with which
// tag, what the trade server answered, which deals filled it, and whether the trading read
// models have applied each step. A step the story needs and the log lacks is reported as
// missing, never skipped, so an auditor sees an incomplete story as such.
package audit

import (
	"sort"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/events/trading"
	"tradesvc/projections"
)

// Place is where a record is in the log and when Kafka took it.
type Place struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// Timestamp is the record's Kafka timestamp (Unix ms): when it was appended.
	Timestamp int64 `json:"timestamp"`
	// Applied says whether the trading read models have applied this record (nil: unknown,
	// the projection's positions could not be read).
	Applied *bool `json:"applied,omitempty"`
}

// Record is one event read from the log with its place.
type Record struct {
	Place    Place
	Envelope events.Envelope
	Event    events.Event
}

// Who is the requester of an attempt.
type Who struct {
	APIKeyID   int64  `json:"apiKeyId"`
	SourceAddr string `json:"sourceAddr"`
	Method     string `json:"method"`
	Path       string `json:"path"`
	Params     string `json:"params"`
}

// Story is the timeline of one operation.
type Story struct {
	OperationID   string `json:"operationId"`
	Login         int64  `json:"login"`
	Tag           string `json:"tag"`
	Kind          string `json:"kind"`
	ClientOrderID string `json:"clientOrderId"`
	Symbol        string `json:"symbol,omitempty"`
	Side          string `json:"side,omitempty"`
	Type          string `json:"type,omitempty"`
	Volume        string `json:"volume,omitempty"`
	Price         string `json:"price,omitempty"`
	OrderID       int64  `json:"orderId,omitempty"`
	PositionID    int64  `json:"positionId,omitempty"`
	SweepID       string `json:"sweepId,omitempty"`
	// Legs are the operation ids of a sweep's closes (each has its own story).
	Legs     []string  `json:"legs,omitempty"`
	Attempts []Attempt `json:"attempts"`
	Deals    []Deal    `json:"deals"`
	// ReadModel is the operation's row in the trading read model, when Postgres was reachable.
	ReadModel *ReadModelRow `json:"readModel,omitempty"`
	// Void: the command was an orphan, a same-id retry's appended beside the idempotency
	// record's insert that found the id bound to another operation (which answered the
	// retry). It was never sent, and no read model shows it (docs/trading.md, "Idempotency").
	Void     bool     `json:"void,omitempty"`
	Complete bool     `json:"complete"`
	Missing  []string `json:"missing"`
}

// Attempt is one send of the operation: its command and what the executor did with it.
type Attempt struct {
	Attempt int  `json:"attempt"`
	Who     *Who `json:"who,omitempty"`
	// Received is when the gateway received the request; Recorded when it wrapped the
	// command for the log (the envelope's occurredAt); Appended where the log holds it
	// (the first copy; Copies counts copies a retry of a failed append wrote again).
	Received int64 `json:"received,omitempty"`
	Recorded int64 `json:"recorded,omitempty"`
	// Event is the command's event type, RecordedBy the component that appended it.
	Event      string   `json:"event,omitempty"`
	RecordedBy string   `json:"recordedBy,omitempty"`
	Appended   *Place   `json:"appended,omitempty"`
	Copies     int      `json:"copies,omitempty"`
	Sent       *Sent    `json:"sent,omitempty"`
	Answers    []Answer `json:"answers"`
}

// Sent is the executor handing the attempt to the trade server.
type Sent struct {
	At  int64  `json:"at"`
	Tag string `json:"tag"`
	// Source: "ExecutionSent_v1", or "outcome" (ExecutionOutcome_v1.sentAt).
	Source string `json:"source"`
	Place  Place  `json:"place"`
}

// Answer is an outcome of the attempt (an IN_DOUBT and its later reconciliation are two).
type Answer struct {
	At         int64  `json:"at"`
	Status     string `json:"status"`
	Code       int    `json:"code,omitempty"`
	Retcode    int    `json:"mt5RetCode,omitempty"`
	Msg        string `json:"msg,omitempty"`
	Unanswered bool   `json:"unanswered,omitempty"`
	Reconciled bool   `json:"reconciled,omitempty"`
	OrderID    int64  `json:"orderId,omitempty"`
	DealID     int64  `json:"dealId,omitempty"`
	Void       bool   `json:"void,omitempty"`
	Place      Place  `json:"place"`
}

// Deal is a trading deal carrying the operation's tag: a fill.
type Deal struct {
	DealID     int64  `json:"dealId"`
	OrderID    int64  `json:"orderId"`
	PositionID int64  `json:"positionId"`
	Volume     string `json:"volume"`
	Price      string `json:"price"`
	// Time is the trade server's deal time (second resolution).
	Time int64 `json:"time"`
	// Places: the relay's record on the trades topic and the outcome that carried it in band.
	Places []Place `json:"places"`
}

// ReadModelRow is what rm.operations shows of the operation.
type ReadModelRow struct {
	Status         string `json:"status"`
	ExecutedVolume string `json:"executedVolume,omitempty"`
	Version        int64  `json:"version"`
	UpdatedAt      int64  `json:"updatedAt"`
}

// Build tells the stories of the operations named by ids from records (any order; records
// of other operations are ignored): commands by operation id, outcomes and sent records by
// operation id, deals by (login, tag). applied, when not nil, marks each place applied by the
// trading projection or not.
func Build(ids []string, records []Record, applied projections.LogPositions) []Story {
	want := map[string]*Story{}
	var order []string
	for _, id := range ids {
		if _, ok := want[id]; !ok {
			want[id] = &Story{OperationID: id}
			order = append(order, id)
		}
	}
	sort.SliceStable(records, func(i, j int) bool { return before(records[i].Place, records[j].Place) })
	for _, r := range records {
		if s := want[events.CorrelationOf(r.Event)]; s != nil {
			s.add(r)
		}
	}
	byTag := map[tagKey]*Story{}
	for _, s := range want {
		if s.Tag != "" {
			byTag[tagKey{s.Login, s.Tag}] = s
		}
	}
	for _, r := range records {
		if d, ok := r.Event.(*events.DealAdded); ok && trading.DealAction(d.Action).IsTrade() {
			if s := byTag[tagKey{d.Login, trading.TagOf(d.Comment)}]; s != nil {
				s.addDeal(d, r.Place)
			}
		}
	}
	out := make([]Story, 0, len(order))
	for _, id := range order {
		s := want[id]
		s.mark(applied)
		s.check()
		out = append(out, *s)
	}
	return out
}

type tagKey struct {
	login int64
	tag   string
}

func before(a, b Place) bool {
	if a.Timestamp != b.Timestamp {
		return a.Timestamp < b.Timestamp
	}
	if a.Topic != b.Topic {
		return a.Topic < b.Topic
	}
	return a.Offset < b.Offset
}

// attempt returns the story's attempt n, adding it in order.
func (s *Story) attempt(n int) *Attempt {
	for i := range s.Attempts {
		if s.Attempts[i].Attempt == n {
			return &s.Attempts[i]
		}
	}
	s.Attempts = append(s.Attempts, Attempt{Attempt: n, Answers: []Answer{}})
	sort.Slice(s.Attempts, func(i, j int) bool { return s.Attempts[i].Attempt < s.Attempts[j].Attempt })
	return s.attempt(n)
}

func (s *Story) add(r Record) {
	switch e := r.Event.(type) {
	case *events.ExecutionSent:
		s.Login, s.Tag = e.Login, e.Tag
		a := s.attempt(e.Attempt)
		if a.Sent == nil || a.Sent.Source != "ExecutionSent_v1" {
			a.Sent = &Sent{At: e.SentAt, Tag: e.Tag, Source: "ExecutionSent_v1", Place: r.Place}
		}
	case *events.ExecutionOutcome:
		s.Login, s.Tag = e.Login, e.Tag
		a := s.attempt(e.Attempt)
		a.Answers = append(a.Answers, Answer{At: e.DecidedAt, Status: e.Status, Code: e.Code, Retcode: e.Retcode,
			Msg: e.Msg, Unanswered: e.Unanswered, Reconciled: e.Reconciled, OrderID: e.OrderID, DealID: e.DealID,
			Void: e.Void, Place: r.Place})
		s.Void = s.Void || e.Void
		if e.SentAt > 0 && a.Sent == nil {
			a.Sent = &Sent{At: e.SentAt, Tag: e.Tag, Source: "outcome", Place: r.Place}
		}
		if e.Facts != nil {
			for i := range e.Facts.Deals {
				if d := &e.Facts.Deals[i]; trading.DealAction(d.Action).IsTrade() {
					s.addDeal(d, r.Place)
				}
			}
		}
	default:
		s.addCommand(r)
	}
}

func (s *Story) addCommand(r Record) {
	op, ok := trading.RequestOf(r.Event)
	if !ok {
		return
	}
	s.Login, s.Tag, s.Kind, s.ClientOrderID = op.Login, op.Tag, string(op.Kind), op.ClientOrderID
	s.Symbol, s.Side, s.Type, s.SweepID = op.Symbol, op.Side, op.Type, op.SweepID
	s.OrderID, s.PositionID = op.TargetOrderID, op.TargetPositionID
	if op.Volume != nil {
		s.Volume = dec.String(*op.Volume)
	}
	if op.Price != nil {
		s.Price = dec.String(*op.Price)
	}
	if sw, ok := r.Event.(*events.SweepRequested); ok {
		s.Legs = s.Legs[:0]
		for _, l := range sw.Legs {
			s.Legs = append(s.Legs, l.OperationID)
		}
	}
	var req events.Requester
	if h, ok := r.Event.(interface{ OperationHeader() *events.Operation }); ok {
		req = h.OperationHeader().Requester
	}
	a := s.attempt(op.Attempt)
	if a.Appended != nil {
		a.Copies++
		return
	}
	a.Who = &Who{APIKeyID: req.APIKeyID, SourceAddr: req.SourceAddr, Method: req.Method, Path: req.Path, Params: req.Params}
	a.Received, a.Recorded = req.ReceivedAt, r.Envelope.OccurredAt
	a.Event, a.RecordedBy = r.Envelope.Type, r.Envelope.Producer
	p := r.Place
	a.Appended = &p
}

func (s *Story) addDeal(d *events.DealAdded, p Place) {
	for i := range s.Deals {
		if s.Deals[i].DealID == d.DealID {
			s.Deals[i].Places = append(s.Deals[i].Places, p)
			return
		}
	}
	s.Deals = append(s.Deals, Deal{DealID: d.DealID, OrderID: d.OrderID, PositionID: d.PositionID,
		Volume: dec.String(d.Volume), Price: dec.String(d.Price), Time: d.Time, Places: []Place{p}})
	sort.Slice(s.Deals, func(i, j int) bool { return s.Deals[i].DealID < s.Deals[j].DealID })
}

// mark sets Applied on every place of the story.
func (s *Story) mark(applied projections.LogPositions) {
	if applied == nil {
		return
	}
	set := func(p *Place) {
		if p == nil {
			return
		}
		ok := applied.Applied(p.Topic, p.Partition, p.Offset)
		p.Applied = &ok
	}
	for i := range s.Attempts {
		a := &s.Attempts[i]
		set(a.Appended)
		if a.Sent != nil {
			set(&a.Sent.Place)
		}
		for j := range a.Answers {
			set(&a.Answers[j].Place)
		}
	}
	for i := range s.Deals {
		for j := range s.Deals[i].Places {
			set(&s.Deals[i].Places[j])
		}
	}
}
