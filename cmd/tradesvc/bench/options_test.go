package bench

import (
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func parse(t *testing.T, scenario string, args ...string) (Options, error) {
	t.Helper()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := Options{Scenario: scenario}
	o.Register(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, o.Normalize()
}

func TestOptionsDefaultToTheIssuesTargets(t *testing.T) {
	o, err := parse(t, ScenarioResult)
	if err != nil || o.Rate != 200 || o.Duration != time.Minute || o.Symbol != "BTCUSD" || o.Volume != "0.01" ||
		!slices.Equal(o.Logins, LoadLogins()) || !o.Floor || !o.Verify || o.KeyUsage != 0.8 {
		t.Fatalf("result defaults %+v, %v", o, err)
	}
	if o, _ := parse(t, ScenarioAck); o.Rate != 1000 {
		t.Fatalf("ack rate %v, want 1000", o.Rate)
	}
	if o, _ := parse(t, ScenarioOverload); o.Duration != 30*time.Second || o.Multiple != 3 || o.Sustained != 0 {
		t.Fatalf("overload defaults %+v", o)
	}
	o, err = parse(t, ScenarioAck, "--rate", "50", "--duration", "10s", "--logins", "1002, 1003", "--side", "sell",
		"--create-keys", "auto", "--fund", "1000000")
	if err != nil || o.Rate != 50 || o.Duration != 10*time.Second || !slices.Equal(o.Logins, []int64{1002, 1003}) || o.Side != "SELL" {
		t.Fatalf("flags %+v, %v", o, err)
	}
	if n, auto, err := o.CreateCount(); n != 0 || !auto || err != nil {
		t.Fatalf("--create-keys auto: %d %v %v", n, auto, err)
	}
	if o, _ := parse(t, ScenarioAck, "--create-keys", "7"); func() bool { n, auto, _ := o.CreateCount(); return n != 7 || auto }() {
		t.Fatal("--create-keys 7")
	}
}

func TestOptionsRefuseWhatCannotRun(t *testing.T) {
	for _, c := range []struct {
		scenario string
		args     []string
		want     string
	}{
		{"nope", nil, "unknown scenario"},
		{ScenarioAck, []string{"--volume", "0"}, "--volume"},
		{ScenarioAck, []string{"--volume", "1e-2"}, "--volume"},
		{ScenarioAck, []string{"--fund", "-5"}, "--fund"},
		{ScenarioAck, []string{"--side", "SHORT"}, "--side"},
		{ScenarioAck, []string{"--create-keys", "many"}, "--create-keys"},
		{ScenarioAck, []string{"--key-usage", "1.5"}, "--key-usage"},
		{ScenarioSustain, []string{"--factor", "1"}, "sustain"},
		{ScenarioResult, []string{"--rate", "-1"}, "--rate"},
	} {
		_, err := parse(t, c.scenario, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: err %v, want one naming %q", c.scenario, c.args, err, c.want)
		}
	}
	if _, err := parse(t, ScenarioAck, "--logins", "1001,x"); err == nil {
		t.Error("--logins 1001,x accepted")
	}
}
