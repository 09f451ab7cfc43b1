package app_test

import (
	"context"
	"encoding/json"
	"maps"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/events"
	"tradesvc/events/dec"
	"tradesvc/infra/kafka"
	"tradesvc/infra/kafka/kafkatest"
	"tradesvc/infra/mt5/remote"
)

type relayState struct {
	State  string `json:"state"`
	Owner  string `json:"owner"`
	Token  int64  `json:"token"`
	Holder *struct {
		Owner string `json:"owner"`
	} `json:"holder"`
}

func relayOf(t *testing.T, p *apptest.Process) relayState {
	t.Helper()
	var s relayState
	if d := p.App.Health().Report().Roles["relay"].Details; d != nil {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// factSeqs counts each trade fact's feed sequence on the trades topic (the relay's copies).
func factSeqs(recs []kafkatest.Record) map[uint64]int {
	out := map[uint64]int{}
	for _, r := range recs {
		if r.Event == nil {
			continue
		}
		if _, isOutcome := r.Event.(*events.ExecutionOutcome); isOutcome {
			continue // the executor's in-band copies travel inside outcomes
		}
		if s, ok := events.FactSeq(r.Event); ok && s > 0 {
			out[s]++
		}
	}
	return out
}

// Two processes run the executor and the relay roles against one trade server: exactly one
// relays (the other stands by, naming it in /readyz), so every trade fact reaches the log once.
// When the active one stops, the other relays within seconds and nothing is lost or doubled.
func TestTwoExecutorsAndRelaysRelayEachFactOnce(t *testing.T) {
	ctx := context.Background()
	vars := fastHealth(apptest.Vars(t))
	simAddr, token, admin := launchRemoteSim(t, vars)
	port, err := remote.NewClient(remote.ClientConfig{Addr: simAddr, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { port.Close() })
	both := maps.Clone(vars)
	both["TRADESVC_SIM_ADDR"] = simAddr
	both["TRADESVC_ROLES"] = "executor,relay,projector"
	procs := []*apptest.Process{apptest.Launch(t, both), apptest.Launch(t, both)}
	kcfg := kafka.Config{Brokers: procs[0].Config.KafkaBrokers, TopicPrefix: procs[0].Config.TopicPrefix}
	trades := kafkatest.Follow(t, ctx, kcfg.Brokers, kcfg, events.TopicTrades())

	var active, standby int
	apptest.Eventually(t, 30*time.Second, "one relay active, the other standing by naming it", func() bool {
		s0, s1 := relayOf(t, procs[0]), relayOf(t, procs[1])
		switch {
		case s0.State == "active" && s1.State == "standby" && s1.Holder != nil && s1.Holder.Owner == s0.Owner:
			active, standby = 0, 1
		case s1.State == "active" && s0.State == "standby" && s0.Holder != nil && s0.Holder.Owner == s1.Owner:
			active, standby = 1, 0
		default:
			return false
		}
		return true
	})
	deposit := func(amount string) uint64 {
		t.Helper()
		if _, err := admin.Deposit(ctx, 1001, dec.MustParse(amount)); err != nil {
			t.Fatal(err)
		}
		// The newest fact's sequence: read the feed to its end.
		var after uint64
		for {
			pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			fs, err := port.Facts(pctx, after, 1000)
			cancel()
			if err != nil || len(fs) == 0 {
				return after
			}
			after = fs[len(fs)-1].Seq
		}
	}
	var last uint64
	for _, a := range []string{"10", "20", "30"} {
		last = deposit(a)
	}
	every := func(n uint64) func([]kafkatest.Record) bool {
		return func(recs []kafkatest.Record) bool {
			seqs := factSeqs(recs)
			for s := uint64(1); s <= n; s++ {
				if seqs[s] == 0 {
					return false
				}
			}
			return true
		}
	}
	trades.WaitFor(30*time.Second, "every fact relayed", every(last))

	procs[active].Stop(t) // releases its lease: the standby takes over at its next attempt
	stopped := time.Now()
	last = deposit("40")
	trades.WaitFor(15*time.Second, "the fact after the stop relayed by the standby", every(last))
	t.Logf("the standby relayed %v after the active relay stopped", time.Since(stopped).Round(time.Millisecond))
	apptest.Eventually(t, 5*time.Second, "the standby's /readyz saying it relays", func() bool {
		return relayOf(t, procs[standby]).State == "active"
	})
	time.Sleep(500 * time.Millisecond) // a second copy, if any, would land now
	for s, n := range factSeqs(trades.Snapshot()) {
		if n != 1 {
			t.Errorf("fact %d relayed %d times, want once", s, n)
		}
	}
}
