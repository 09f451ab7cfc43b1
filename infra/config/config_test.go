package config

import (
	"flag"
	"strings"
	"testing"
)

func load(t *testing.T, args []string, env map[string]string) (Config, error) {
	t.Helper()
	return Load(flag.NewFlagSet("t", flag.ContinueOnError), args, func(k string) string { return env[k] })
}

func TestDefaultsAreTheDocumentedOnes(t *testing.T) {
	c, err := load(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != "127.0.0.1:8443" || c.RunDir != ".run" || c.KafkaBrokers[0] != "127.0.0.1:19092" ||
		c.MasterKeyFile != ".run/master.key" || c.SimDataDir != ".run/sim" || len(c.Roles) != 5 ||
		!c.Has(RoleRelay) || c.RateLimitStore != RateLimitMemory {
		t.Fatalf("unexpected defaults: %+v", c)
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	c, err := load(t, []string{"--roles", "gateway"}, map[string]string{"TRADESVC_ROLES": "sim", "TRADESVC_LISTEN": "127.0.0.1:9443"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Has(RoleGateway) || c.Has(RoleSim) || c.Listen != "127.0.0.1:9443" {
		t.Fatalf("got %+v", c)
	}
}

func TestValidateJoinsEveryProblem(t *testing.T) {
	_, err := load(t, []string{"--roles", "gateway,bogus", "--listen", "nope", "--log-level", "loud", "--tls-cert", "x",
		"--rate-limit-store", "redis"}, nil)
	if err == nil {
		t.Fatal("accepted a bad config")
	}
	for _, want := range []string{"bogus", "listen", "log-level", "tls-cert", "rate-limit-store"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}
