package audit

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/apd/v3"

	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka"
	"tradesvc/infra/testenv"
	"tradesvc/projections"
)

// auditLog is a log of a few operations on isolated topics of the test broker.
type auditLog struct {
	t    *testing.T
	ctx  context.Context
	kcfg kafka.Config
	app  *kafka.Appender
	log  *Log
}

func newAuditLog(t *testing.T) *auditLog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	a := &auditLog{t: t, ctx: ctx}
	a.kcfg = kafka.Config{Brokers: testenv.Brokers(t), TopicPrefix: testenv.TopicPrefix(t), ClientID: "audit-test"}
	if err := kafka.EnsureTopics(ctx, a.kcfg, []events.Topic{events.TopicCommands(), events.TopicExecutions(), events.TopicTrades()}); err != nil {
		t.Fatal(err)
	}
	pub, err := kafka.NewPublisher(a.kcfg, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pub.Close() })
	if a.app, err = kafka.NewAppender(pub, "gateway/test", time.Now); err != nil {
		t.Fatal(err)
	}
	if a.log, err = OpenLog(a.kcfg.Brokers, a.kcfg.TopicPrefix, a.kcfg.ConsumerConfig()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.log.Close() })
	return a
}

func (a *auditLog) append(topic events.Topic, evs ...events.Event) {
	a.t.Helper()
	if err := a.app.Append(a.ctx, topic, evs...); err != nil {
		a.t.Fatal(err)
	}
}

func (a *auditLog) find(q Query) []Story {
	a.t.Helper()
	ids, recs, err := Find(a.ctx, a.log, q)
	if err != nil {
		a.t.Fatal(err)
	}
	return Build(ids, recs, nil)
}

func d(s string) *apd.Decimal { v := dec.MustParse(s); return &v }

func header(login int64, op, coid, tag string, attempt int) events.Operation {
	return events.Operation{OperationID: op, Login: login, ClientOrderID: coid, Tag: tag, Attempt: attempt,
		Requester: events.Requester{APIKeyID: 9, SourceAddr: "203.0.113.7:5000", Method: "POST", Path: "/v1/order",
			Params: "symbol=BTCUSD&side=BUY", ReceivedAt: time.Now().UnixMilli()}}
}

func deal(login, id, order int64, comment string) *events.DealAdded {
	z := dec.MustParse("0")
	return &events.DealAdded{Fact: events.Fact{Seq: uint64(id), Login: login}, DealID: id, OrderID: order, PositionID: order, Symbol: "BTCUSD",
		Volume: dec.MustParse("0.01"), Price: dec.MustParse("60015.00"), Profit: z, Commission: z, Swap: z,
		Comment: comment, Time: time.Now().Unix() * 1000}
}

// TestAuditTellsEachStoryFromTheLogAndReportsMissingSteps: an order told by client order id
// (new log shape: sentAt and the deal in the outcome, the relay's copy too); one refused
// unsent then filled on its second attempt (old shape: ExecutionSent_v1, the deal on the
// trades topic); found again by its order ticket, its position ticket and a time range; and
// one whose outcome and deal are missing is incomplete.
func TestAuditTellsEachStoryFromTheLogAndReportsMissingSteps(t *testing.T) {
	a := newAuditLog(t)
	start := time.Now().Add(-time.Second)
	a.append(events.TopicCommands(), &events.OrderRequested{Operation: header(2001, "op-a", "coid-a", "#AAAAAA", 1),
		Symbol: "BTCUSD", Side: "BUY", Type: "MARKET", Volume: dec.MustParse("0.01")})
	inBand := *deal(2001, 9001, 8001, "#AAAAAA")
	now := time.Now().UnixMilli()
	a.append(events.TopicExecutions(), &events.ExecutionOutcome{OperationID: "op-a", Login: 2001, Tag: "#AAAAAA", Attempt: 1,
		Status: "FILLED", Retcode: 10009, OrderID: 8001, DealID: 9001, Position: 8001, Price: d("60015.00"),
		Volume: d("0.01"), DecidedAt: now, SentAt: now - 5, Facts: &events.ExecutionFacts{Deals: []events.DealAdded{inBand}}})
	a.append(events.TopicTrades(), &inBand)

	// Attempt 1 refused unsent, attempt 2 sent and filled; another login's noise between.
	a.append(events.TopicCommands(), &events.OrderRequested{Operation: header(2002, "op-b", "coid-b", "#BBBBBB", 1),
		Symbol: "BTCUSD", Side: "SELL", Type: "MARKET", Volume: dec.MustParse("0.01")})
	a.append(events.TopicExecutions(), &events.ExecutionOutcome{OperationID: "op-b", Login: 2002, Tag: "#BBBBBB", Attempt: 1,
		Status: "REJECTED", Code: -1000, Msg: "not dispatched", DecidedAt: time.Now().UnixMilli()})
	a.append(events.TopicCommands(), &events.OrderRequested{Operation: header(2003, "op-noise", "coid-b", "#NNNNNN", 1),
		Symbol: "BTCUSD", Side: "SELL", Type: "MARKET", Volume: dec.MustParse("0.01")})
	a.append(events.TopicCommands(), &events.OrderRequested{Operation: header(2002, "op-b", "coid-b", "#BBBBBB", 2),
		Symbol: "BTCUSD", Side: "SELL", Type: "MARKET", Volume: dec.MustParse("0.01")})
	a.append(events.TopicExecutions(), &events.ExecutionSent{OperationID: "op-b", Login: 2002, Tag: "#BBBBBB", Attempt: 2,
		SentAt: time.Now().UnixMilli()}, &events.ExecutionOutcome{OperationID: "op-b", Login: 2002, Tag: "#BBBBBB",
		Attempt: 2, Status: "FILLED", Retcode: 10009, OrderID: 8002, DealID: 9002, DecidedAt: time.Now().UnixMilli()})
	a.append(events.TopicTrades(), deal(2002, 9002, 8002, "#BBBBBB"), deal(2002, 9003, 8003, "[sl 59000.00]"))

	// Recorded, never answered, and filled for all anyone can tell: its outcome is not in the log.
	a.append(events.TopicCommands(), &events.OrderRequested{Operation: header(2001, "op-c", "coid-c", "#CCCCCC", 1),
		Symbol: "BTCUSD", Side: "BUY", Type: "MARKET", Volume: dec.MustParse("0.01")})

	s := a.find(Query{Login: 2001, ClientOrderID: "coid-a"})
	if len(s) != 1 || s[0].OperationID != "op-a" || !s[0].Complete || len(s[0].Missing) != 0 {
		t.Fatalf("story of coid-a: %+v", s)
	}
	at := s[0].Attempts
	if len(at) != 1 || at[0].Who.APIKeyID != 9 || at[0].Who.SourceAddr != "203.0.113.7:5000" || at[0].Who.Path != "/v1/order" ||
		at[0].Received == 0 || at[0].Recorded == 0 || at[0].Appended == nil || at[0].Sent == nil ||
		at[0].Sent.Source != "outcome" || at[0].Sent.Tag != "#AAAAAA" || len(at[0].Answers) != 1 ||
		at[0].Answers[0].Retcode != 10009 {
		t.Errorf("attempt of coid-a: %+v", at)
	}
	if len(s[0].Deals) != 1 || s[0].Deals[0].DealID != 9001 || len(s[0].Deals[0].Places) != 2 {
		t.Errorf("deals of coid-a (in band and relayed): %+v", s[0].Deals)
	}
	if !strings.HasSuffix(at[0].Appended.Topic, events.TopicCommands().Name) {
		t.Errorf("appended to %s", at[0].Appended.Topic)
	}

	b := a.find(Query{Login: 2002, ClientOrderID: "coid-b"})
	if len(b) != 1 || !b[0].Complete || len(b[0].Attempts) != 2 || b[0].Attempts[0].Sent != nil ||
		b[0].Attempts[0].Answers[0].Code != -1000 || b[0].Attempts[1].Sent == nil ||
		b[0].Attempts[1].Sent.Source != "ExecutionSent_v1" || len(b[0].Deals) != 1 || b[0].Deals[0].DealID != 9002 {
		t.Fatalf("story of coid-b (two attempts, one fill): %+v", b)
	}
	for _, q := range []Query{{OrderID: 8002}, {PositionID: 8002}, {From: start, Login: 2002}} {
		got := a.find(q)
		if len(got) != 1 || got[0].OperationID != "op-b" || !got[0].Complete {
			t.Errorf("%+v found %+v, want op-b", q, got)
		}
	}
	all := a.find(Query{From: start})
	if len(all) != 4 {
		t.Errorf("the time range found %d operations, want 4", len(all))
	}

	c := a.find(Query{Login: 2001, ClientOrderID: "coid-c"})
	if len(c) != 1 || c[0].Complete || strings.Join(c[0].Missing, "; ") != "attempt 1: sent; attempt 1: answered" {
		t.Fatalf("story of coid-c: complete %v, missing %q", c[0].Complete, c[0].Missing)
	}

	// The table and the JSON lines say the same: every step, and what is missing.
	var table, lines bytes.Buffer
	if err := WriteTable(&table, append(b, c...)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"received", "recorded", "appended", "sent", "answered", "filled", "REJECTED code -1000",
		"mt5RetCode 10009", "tag #BBBBBB (ExecutionSent_v1)", "not sent: refused before sending", "MISSING", "attempt 1: answered", "INCOMPLETE"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := WriteJSONLines(&lines, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(lines.String(), `"complete":false`) || !strings.Contains(lines.String(), `"missing":["attempt 1: sent","attempt 1: answered"]`) {
		t.Errorf("JSON line %s", lines.String())
	}

	// With the trading projection's positions: what it applied, and what it did not.
	ids, recs, err := Find(a.ctx, a.log, Query{Login: 2001, ClientOrderID: "coid-a"})
	if err != nil {
		t.Fatal(err)
	}
	cmd := a.log.topic(events.TopicCommands().Name)
	story := Build(ids, recs, projections.LogPositions{{Topic: cmd, Partition: s[0].Attempts[0].Appended.Partition}: s[0].Attempts[0].Appended.Offset + 1})
	if p := story[0].Attempts[0].Appended; p.Applied == nil || !*p.Applied {
		t.Errorf("the command is behind the stored position: applied %v", p.Applied)
	}
	if p := story[0].Attempts[0].Answers[0].Place; p.Applied == nil || *p.Applied {
		t.Errorf("the outcome's partition has no stored position: applied %v", p.Applied)
	}
}
