package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events"
	"tradesvc/infra/kafka"
	"tradesvc/infra/testenv"
	"tradesvc/projections"

	"github.com/cockroachdb/apd/v3"
)

type dlqList struct {
	Pending     int `json:"pending"`
	DeadLetters []struct {
		Consumer  string `json:"consumer"`
		EventType string `json:"eventType"`
		Error     string `json:"error"`
		Attempts  int    `json:"attempts"`
		Key       string `json:"key"`
		Replayed  bool   `json:"replayed"`
	} `json:"deadLetters"`
}

type dlqReplay struct {
	Replayed []json.RawMessage `json:"replayed"`
	Failed   []struct {
		ReplayError string `json:"replayError"`
	} `json:"failed"`
	Skipped []json.RawMessage `json:"skipped"`
}

func decodeOut(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
}

// A reference event the read model refuses (a CHECK constraint the test adds, standing for
// a bug fixed later) fails the same way until it is parked, while the projection goes on.
// `tradesvc dlq list` shows it with its error; `tradesvc dlq replay` fails on it while the
// cause is there (it stays parked, exit 1) and, once the constraint is dropped, re-applies
// it through the projection and marks it replayed (exit 0, nothing pending).
func TestDLQReplayReappliesAParkedEventOnceItsCauseIsRemoved(t *testing.T) {
	vars := apptest.Vars(t)
	vars["TRADESVC_POISON_ATTEMPTS"] = "2"
	svc := apptest.Serve(t, apptest.Launch(t, vars))
	for k, v := range vars {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	svc.WaitForSymbols(t, 60*time.Second, "BTCUSD")
	if _, err := svc.PG.Exec(ctx, `ALTER TABLE rm.symbols ADD CONSTRAINT test_poison CHECK (symbol <> 'POISON1')`); err != nil {
		t.Fatal(err)
	}
	pub, err := kafka.NewPublisher(kafka.Config{Brokers: svc.Config.KafkaBrokers, TopicPrefix: svc.Config.TopicPrefix}, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pub.Close(); err != nil {
			t.Error(err)
		}
	}()
	appender, err := kafka.NewAppender(pub, "dlq-test", time.Now)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	if err := appender.Append(ctx, events.TopicReference(), &events.SymbolSpecified{SymbolSpecOf: events.SymbolSpecOf[apd.Decimal]{Symbol: "POISON1"}, Time: now},
		&events.SymbolSpecified{SymbolSpecOf: events.SymbolSpecOf[apd.Decimal]{Symbol: "AFTER1"}, Time: now}); err != nil {
		t.Fatal(err)
	}
	symbolIn := func(name string) bool {
		var n int
		err := svc.PG.QueryRow(ctx, `SELECT count(*) FROM rm.symbols WHERE symbol = $1`, name).Scan(&n)
		return err == nil && n == 1
	}
	apptest.Eventually(t, 60*time.Second, "the projection to go on past the refused event", func() bool { return symbolIn("AFTER1") })

	var list dlqList
	apptest.Eventually(t, 30*time.Second, "the refused event in dlq list", func() bool {
		code, out, errOut := cli(t, "dlq", "list")
		if code != 0 {
			t.Fatalf("dlq list: %d %s", code, errOut)
		}
		list = dlqList{}
		decodeOut(t, out, &list)
		return list.Pending == 1
	})
	dl := list.DeadLetters[0]
	if dl.Consumer != projections.ReferenceName || dl.EventType != "SymbolSpecified_v1" || dl.Attempts != 2 ||
		!strings.Contains(dl.Error, "test_poison") || dl.Key != "symbol:POISON1" {
		t.Fatalf("dlq list entry %+v", dl)
	}
	if symbolIn("POISON1") {
		t.Fatal("the refused event is in the read model")
	}

	// The cause is still there: the replay fails on it, exits 1, and it stays parked.
	code, out, errOut := cli(t, "dlq", "replay")
	var rep dlqReplay
	decodeOut(t, out, &rep)
	if code != 1 || len(rep.Failed) != 1 || len(rep.Replayed) != 0 || !strings.Contains(rep.Failed[0].ReplayError, "test_poison") ||
		!strings.Contains(errOut, "could not be re-applied") {
		t.Fatalf("replay with the cause present: exit %d, %+v, stderr %q", code, rep, errOut)
	}

	// The cause is removed: the replay applies it and marks it.
	if _, err := svc.PG.Exec(ctx, `ALTER TABLE rm.symbols DROP CONSTRAINT test_poison`); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = cli(t, "dlq", "replay", "--projection", projections.ReferenceName)
	rep = dlqReplay{}
	decodeOut(t, out, &rep)
	if code != 0 || len(rep.Replayed) != 1 || len(rep.Failed) != 0 {
		t.Fatalf("replay once the cause is gone: exit %d, %+v, stderr %q", code, rep, errOut)
	}
	if !symbolIn("POISON1") {
		t.Fatal("the replayed event is not in the read model")
	}
	code, out, _ = cli(t, "dlq", "list")
	list = dlqList{}
	decodeOut(t, out, &list)
	if code != 0 || list.Pending != 0 || len(list.DeadLetters) != 0 {
		t.Fatalf("dlq list after the replay: %s", out)
	}
	code, out, _ = cli(t, "dlq", "list", "--all")
	list = dlqList{}
	decodeOut(t, out, &list)
	if code != 0 || len(list.DeadLetters) != 1 || !list.DeadLetters[0].Replayed {
		t.Fatalf("dlq list --all after the replay: %s", out)
	}
	// A second replay has nothing left to do.
	code, out, _ = cli(t, "dlq", "replay")
	rep = dlqReplay{}
	decodeOut(t, out, &rep)
	if code != 0 || len(rep.Replayed)+len(rep.Failed)+len(rep.Skipped) != 0 {
		t.Fatalf("second replay: exit %d %s", code, out)
	}
}
