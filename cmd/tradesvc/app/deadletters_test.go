package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka"
	"tradesvc/infra/testenv"
	"tradesvc/projections"
)

func listDeadLetters(t *testing.T, svc *apptest.Service) ([]app.DeadLetter, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return app.ListDeadLetters(ctx, svc.Config, false)
}

// publishRaw appends raw bytes under key to a topic of the service's log.
func publishRaw(t *testing.T, svc *apptest.Service, topic events.Topic, key string, value []byte) {
	t.Helper()
	pub, err := kafka.NewPublisher(kafka.Config{Brokers: svc.Config.KafkaBrokers, TopicPrefix: svc.Config.TopicPrefix}, testenv.Logger())
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := pub.Close(); err != nil {
			t.Error(err)
		}
	}()
	if err := pub.PublishBatch(topic.Name, kafka.WithKey(message.NewMessage(events.NewID(), value), key)); err != nil {
		t.Fatal(err)
	}
}

// A message on the trades topic that is no event at all is parked by each projection that
// reads the topic (the trading read models, the deal history, execution quality), with its key, bytes, source position and error, in the topic's
// dead-letter topic; /readyz counts it; the projections go on (a deposit made after it
// reaches the read models). Replaying it fails (still undecodable) and leaves it parked.
func TestUndecodableMessageIsParkedAndTheProjectionsGoOn(t *testing.T) {
	vars := fastHealth(apptest.Vars(t))
	svc := apptest.Serve(t, apptest.Launch(t, vars))
	svc.WaitForAccount(t, 60*time.Second, 1001)
	publishRaw(t, svc, events.TopicTrades(), "1001", []byte("this is not an event"))

	var dls []app.DeadLetter
	apptest.Eventually(t, 60*time.Second, "the three trades projections to park the message", func() bool {
		var err error
		dls, err = listDeadLetters(t, svc)
		return err == nil && len(dls) == 3
	})
	consumers := map[string]bool{}
	for _, dl := range dls {
		consumers[dl.Consumer] = true
		if dl.Topic != svc.Config.TopicPrefix+events.TopicTrades().Name || dl.Key != "1001" || dl.Value != "this is not an event" ||
			!strings.Contains(dl.Error, "not an event envelope") || dl.Attempts != 0 || dl.ParkedAt.IsZero() ||
			dl.DLQTopic != svc.Config.TopicPrefix+events.TopicTrades().DeadLetter().Name {
			t.Errorf("dead letter %+v", dl)
		}
	}
	if !consumers[projections.TradingName] || !consumers[projections.DealHistoryName] || !consumers[projections.ExecutionQualityName] {
		t.Errorf("parked by %v, want %s, %s and %s", consumers, projections.TradingName, projections.DealHistoryName,
			projections.ExecutionQualityName)
	}

	// The projections went on: a balance change after the poison message is applied.
	var before string
	if err := svc.PG.QueryRow(context.Background(), `SELECT balance::text FROM rm.account_balances WHERE login = 1001`).Scan(&before); err != nil {
		before = "0"
	}
	if _, err := svc.App.Sim().Deposit(1001, dec.MustParse("10")); err != nil {
		t.Fatal(err)
	}
	apptest.Eventually(t, 60*time.Second, "the deposit after the poison message in rm.account_balances", func() bool {
		var now string
		err := svc.PG.QueryRow(context.Background(), `SELECT balance::text FROM rm.account_balances WHERE login = 1001`).Scan(&now)
		return err == nil && now != before
	})

	// /readyz shows what was parked, per projection. A consumer counts its park once the
	// dead-letter producer has its acknowledgement, which can come a little after the record
	// is readable (the listing above), hence the wait.
	var details struct {
		Projections map[string]struct {
			Parked int `json:"parked"`
		} `json:"projections"`
		Parked int `json:"parked"`
	}
	apptest.Eventually(t, 10*time.Second, "/readyz projector details to count the 3 parked messages", func() bool {
		if err := json.Unmarshal(mustJSON(t, svc.App.Health().Report().Roles["projector"].Details), &details); err != nil {
			t.Fatal(err)
		}
		return details.Parked == 3
	})
	for _, name := range []string{projections.TradingName, projections.DealHistoryName, projections.ExecutionQualityName} {
		if got := details.Projections[name].Parked; got != 1 {
			t.Errorf("/readyz: %s parked %d, want 1 (%+v)", name, got, details)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := app.ReplayDeadLetters(ctx, svc.Config, testenv.Logger(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) != 3 || len(res.Replayed) != 0 || !strings.Contains(res.Failed[0].ReplayError, "still undecodable") {
		t.Errorf("replay of undecodable messages: %+v", res)
	}
	if dls, err := listDeadLetters(t, svc); err != nil || len(dls) != 3 {
		t.Errorf("after a failed replay %d pending (%v), want all three still parked", len(dls), err)
	}
}
