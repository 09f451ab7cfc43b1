package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"tradesvc/infra/testenv"
)

// cli runs the tradesvc command in-process and returns its exit status, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// isolatedEnv points every configuration variable at this test's own databases and topics.
func isolatedEnv(t *testing.T) {
	t.Setenv("TRADESVC_RUN_DIR", t.TempDir())
	t.Setenv("TRADESVC_KAFKA_BROKERS", testenv.Kafka(t))
	t.Setenv("TRADESVC_TOPIC_PREFIX", testenv.TopicPrefix(t))
	t.Setenv("TRADESVC_PG_URL", testenv.PGDatabase(t))
	t.Setenv("TRADESVC_CH_ADDR", testenv.CH(t))
	t.Setenv("TRADESVC_CH_DATABASE", testenv.CHDatabase(t))
}

func TestAdminCommandsPrintJSONAndActOnTheStores(t *testing.T) {
	isolatedEnv(t)
	if code, out, errOut := cli(t, "migrate"); code != 0 || !strings.Contains(out, `"postgres":"migrated"`) {
		t.Fatalf("migrate: %d %q %q", code, out, errOut)
	}
	// A second migrate is a no-op that still succeeds.
	if code, _, errOut := cli(t, "migrate"); code != 0 {
		t.Fatalf("second migrate: %d %s", code, errOut)
	}

	code, out, errOut := cli(t, "keys", "create", "--logins", "1001,1002", "--allow-ip", "127.0.0.1,10.0.0.0/8")
	if code != 0 {
		t.Fatalf("keys create: %d %s", code, errOut)
	}
	var created struct {
		APIKey    string  `json:"apiKey"`
		APISecret string  `json:"apiSecret"`
		Logins    []int64 `json:"logins"`
		ReadOnly  *bool   `json:"readOnly"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatalf("keys create printed %q: %v", out, err)
	}
	if len(created.APIKey) != 64 || len(created.APISecret) != 64 || len(created.Logins) != 2 ||
		created.Logins[0] != 1001 || created.ReadOnly == nil || *created.ReadOnly {
		t.Fatalf("keys create JSON = %s", out)
	}

	code, out, _ = cli(t, "keys", "list")
	if code != 0 || !strings.Contains(out, created.APIKey) || strings.Contains(out, created.APISecret) {
		t.Fatalf("keys list must show the key and never its secret: %s", out)
	}
	if !strings.Contains(out, `"10.0.0.0/8"`) || !strings.Contains(out, `"127.0.0.1/32"`) {
		t.Fatalf("keys list lost the allowlist: %s", out)
	}
	if code, out, _ = cli(t, "keys", "scope", "--api-key", created.APIKey, "--logins", "1003"); code != 0 || !strings.Contains(out, "[1003]") {
		t.Fatalf("keys scope: %d %s", code, out)
	}
	if code, out, _ = cli(t, "keys", "revoke", "--api-key", created.APIKey); code != 0 || !strings.Contains(out, `"revoked":true`) {
		t.Fatalf("keys revoke: %d %s", code, out)
	}
	if _, out, _ = cli(t, "keys", "list"); !strings.Contains(out, `"revoked":true`) || !strings.Contains(out, "[1003]") {
		t.Fatalf("keys list after scope and revoke: %s", out)
	}

	for _, c := range []struct{ flag, want string }{{"--off", `{"trading":"off"}`}, {"--on", `{"trading":"on"}`}} {
		if code, out, errOut := cli(t, "admin", "trading", c.flag); code != 0 || strings.TrimSpace(out) != c.want {
			t.Fatalf("admin trading %s: %d %q %q", c.flag, code, out, errOut)
		}
	}

	if code, out, errOut := cli(t, "replay", "--projection", "projection.reference"); code != 0 || !strings.Contains(out, `"projection":"projection.reference"`) {
		t.Fatalf("replay: %d %q %q", code, out, errOut)
	}
}

func TestBadUsageFailsOnStderrWithNothingOnStdout(t *testing.T) {
	isolatedEnv(t)
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"keys"},
		{"keys", "create"},
		{"keys", "create", "--logins", "10x1"},
		{"keys", "revoke"},
		{"admin", "trading"},
		{"admin", "trading", "--on", "--off"},
		{"replay"},
		{"replay", "--projection", "nope"},
		{"dlq"},
		{"dlq", "frobnicate"},
		{"dlq", "replay", "--projection", "nope"},
		{"serve", "--roles", "gateway,bogus"},
	} {
		code, out, errOut := cli(t, args...)
		if code == 0 || out != "" || errOut == "" {
			t.Errorf("tradesvc %v: exit %d, stdout %q, stderr %q; want a failure explained on stderr", args, code, out, errOut)
		}
	}
}

func TestMemoryLimitIsAQuarterOfWhatTheProcessMayUseAndAtLeastOneGiB(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name          string
		total, cgroup uint64
		want          int64
	}{
		{"the machine's memory, no cgroup limit", 24 * gib, 0, 6 * gib},
		{"a cgroup limit below the machine's", 64 * gib, 8 * gib, 2 * gib},
		{"a cgroup limit above the machine's", 16 * gib, 32 * gib, 4 * gib},
		{"a small machine: the floor", 2 * gib, 0, gib},
		{"nothing known: the floor", 0, 0, gib},
		{"only the cgroup known", 0, 12 * gib, 3 * gib},
	} {
		if got := memoryLimit(c.total, c.cgroup); got != c.want {
			t.Errorf("%s: memoryLimit(%d, %d) = %d, want %d", c.name, c.total, c.cgroup, got, c.want)
		}
	}
}

func TestParseCgroupLimit(t *testing.T) {
	for in, want := range map[string]uint64{
		"max\n":                 0, // v2: no limit
		"9223372036854771712\n": 0, // v1: no limit
		"8589934592\n":          8 << 30,
		"garbage":               0,
	} {
		if got := parseCgroupLimit([]byte(in)); got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", in, got, want)
		}
	}
}
