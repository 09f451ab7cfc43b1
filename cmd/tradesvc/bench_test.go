package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/cmd/tradesvc/bench"
)

// TestBenchMeasuresAServiceFromOutside runs `tradesvc bench` against an in-process service
// for a few seconds at a low rate, as a broker would against theirs: keys created through
// the key store, logins funded through the simulator, the floor measured on the service's
// own Kafka and Postgres, and every order counted, timed and verified FILLED.
func TestBenchMeasuresAServiceFromOutside(t *testing.T) {
	svc := apptest.Start(t)
	svc.WaitForQuote(t, 60*time.Second, "BTCUSD")
	for _, l := range []int64{1001, 1002} {
		svc.WaitForAccount(t, 60*time.Second, l)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	simAddr, err := svc.App.SimAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := svc.Config
	t.Setenv("TRADESVC_RUN_DIR", cfg.RunDir) // the master key, the simulator's token
	t.Setenv("TRADESVC_KAFKA_BROKERS", strings.Join(cfg.KafkaBrokers, ","))
	t.Setenv("TRADESVC_TOPIC_PREFIX", cfg.TopicPrefix)
	t.Setenv("TRADESVC_PG_URL", cfg.PGURL)
	t.Setenv("TRADESVC_CH_ADDR", cfg.CHAddr)
	t.Setenv("TRADESVC_CH_DATABASE", cfg.CHDatabase)
	t.Setenv("TRADESVC_SIM_ADDR", simAddr)
	t.Setenv("TRADESVC_BASE_URL", "")
	t.Setenv("TRADESVC_CA_CERT", "")
	keysFile := filepath.Join(t.TempDir(), "keys.jsonl")
	common := []string{"--base-url", svc.BaseURL, "--ca-cert", filepath.Join(cfg.RunDir, "tls", "ca.pem"),
		"--logins", "1001,1002", "--floor-samples", "20", "--keys", keysFile, "--create-keys", "auto",
		"--keys-out", keysFile, "--json"}

	t.Run("ack: every order acknowledged, its DEAL timed, and FILLED", func(t *testing.T) {
		rep := runBench(t, append([]string{"bench", "ack", "--rate", "10", "--duration", "3s", "--fund", "1000000"}, common...)...)
		l := rep.Load
		if l == nil || l.RespType != "ACK" || l.Scheduled != 30 || l.Sent != 30 || l.Acknowledged != 30 ||
			l.Answers["200 ACCEPTED"] != 30 || len(l.Answers) != 1 || l.Keys != 2 {
			t.Fatalf("load %+v", l)
		}
		if l.Latency.Count != 30 || l.Latency.P50 <= 0 || l.Latency.P99 < l.Latency.P50 || l.AcceptedPerSec < 9 {
			t.Fatalf("latency %+v, accepted/s %v", l.Latency, l.AcceptedPerSec)
		}
		if f := l.Fill; f == nil || f.Seen != 30 || f.Missing != 0 || f.Latency.Count != 30 || f.P99WithMissingMs <= 0 {
			t.Fatalf("fill %+v", l.Fill)
		}
		if rep.Keys.Keys != 2 || rep.Keys.OrdersPerSecPerKey != 8 {
			t.Fatalf("keys %+v: 10/s needs two keys at 8/s", rep.Keys)
		}
	})

	t.Run("result: every answer FILLED, and the keys of the first run reused", func(t *testing.T) {
		rep := runBench(t, append([]string{"bench", "result", "--rate", "10", "--duration", "2s"}, common...)...)
		l := rep.Load
		if l == nil || l.RespType != "RESULT" || l.Scheduled != 20 || l.Answers["200 FILLED"] != 20 || l.Fill != nil {
			t.Fatalf("load %+v", l)
		}
		if rep.Keys.Keys != 2 {
			t.Fatalf("%d keys: the two of the keys file carry 10/s, none is created", rep.Keys.Keys)
		}
	})
}

// runBench runs the command, expects exit 0 and returns its JSON report after checking what
// every run must hold: the floor's parts measured, every acknowledged order FILLED.
func runBench(t *testing.T, args ...string) bench.Report {
	t.Helper()
	code, out, errOut := cli(t, args...)
	if code != 0 {
		t.Fatalf("tradesvc %v: exit %d\nstdout %s\nstderr %s", args, code, out, errOut)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	f := rep.Floor
	if f == nil || f.HTTPS.Count != 20 || f.HTTPS.P50 <= 0 || f.Kafka2.P50 <= 0 || f.PGCommit.P50 <= 0 ||
		f.TotalMs < f.HTTPS.P50+f.Kafka2.P50 {
		t.Fatalf("floor %+v", f)
	}
	if rep.Load.P50OverFloor <= 0 {
		t.Fatalf("p50/floor %v", rep.Load.P50OverFloor)
	}
	v := rep.Verify
	if !rep.OK || v == nil || v.Checked != rep.Load.Acknowledged || v.Filled != v.Checked || v.NotFilled != 0 {
		t.Fatalf("verification %+v, ok %v, problems %v", v, rep.OK, rep.Problems)
	}
	if !strings.Contains(errOut, "measuring the floor") {
		t.Fatalf("no progress on stderr: %q", errOut)
	}
	return rep
}
