//go:build faults

package faults

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"tradesvc/cmd/tradesvc/app"
	"tradesvc/cmd/tradesvc/app/apptest"
	"tradesvc/gateway/gwclient"
	"tradesvc/infra/config"
	"tradesvc/infra/keys"
	"tradesvc/infra/mt5/remote"
)

// splitRun is `make run SPLIT=1` in a test: the simulator, two relays (one active, one standing
// by), the executor, the projector and two gateways, each a child process of the test binary
// (`serve --roles …`) on this test's own stores, so each can be killed with SIGKILL and started
// again.
type splitRun struct {
	t      *testing.T
	cfg    config.Config
	logs   string
	simAdr string
	gwAddr map[string]string

	mu    sync.Mutex
	procs map[string]*proc
	vars  map[string]map[string]string

	pg      *pgxpool.Pool
	clients []*gwclient.Client // one per gateway, same key
	port    *remote.Client     // the trade server, as the test's own client
}

// splitNames are the processes; gateway-1 serves first (it generates the TLS files).
var splitNames = []string{"sim", "relay-1", "relay-2", "executor", "projector", "gateway-1", "gateway-2"}

// freeAddrs are the addresses freeAddr has handed out in this test process.
var freeAddrs = struct {
	sync.Mutex
	given map[int]bool
}{given: map[int]bool{}}

// freeAddr returns a loopback address nothing listens on, for a process the test starts (and
// may kill and start again) later. Its port lies below Linux's ephemeral range (32768–60999):
// a port from there (what listening on port 0 gives) can be taken meanwhile by any outgoing
// connection of the processes and services on the machine, and a gateway then cannot bind it.
// 21000–24999 holds none of the services' fixed ports.
func freeAddr(t *testing.T) string {
	t.Helper()
	const first, count = 21000, 4000
	freeAddrs.Lock()
	defer freeAddrs.Unlock()
	start := rand.IntN(count)
	for i := range count {
		port := first + (start+i)%count
		if freeAddrs.given[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		addr := ln.Addr().String()
		if err := ln.Close(); err != nil {
			t.Fatal(err)
		}
		freeAddrs.given[port] = true
		return addr
	}
	t.Fatalf("no free port in 127.0.0.1:%d-%d", first, first+count-1)
	return ""
}

// startSplit starts every process, waits until the service can trade, and creates the key
// the clients use (scoped to 1001 and 1002, unlimited).
func startSplit(t *testing.T) *splitRun {
	t.Helper()
	base := apptest.Vars(t)
	s := &splitRun{t: t, logs: t.TempDir(), simAdr: freeAddr(t), procs: map[string]*proc{},
		vars: map[string]map[string]string{}, gwAddr: map[string]string{"gateway-1": freeAddr(t), "gateway-2": freeAddr(t)}}
	for _, name := range splitNames {
		v := maps.Clone(base)
		v["TRADESVC_METRICS_LISTEN"] = freeAddr(t) // an empty setting means the default port
		switch name {
		case "sim":
			v["TRADESVC_ROLES"], v["TRADESVC_SIM_LISTEN"] = "sim", s.simAdr
		case "relay-1", "relay-2":
			v["TRADESVC_ROLES"], v["TRADESVC_SIM_ADDR"] = "relay", s.simAdr
		case "executor":
			v["TRADESVC_ROLES"], v["TRADESVC_SIM_ADDR"] = "executor", s.simAdr
		case "projector":
			v["TRADESVC_ROLES"] = "projector"
		default:
			v["TRADESVC_ROLES"], v["TRADESVC_LISTEN"], v["TRADESVC_RATE_LIMIT_STORE"] = "gateway", s.gwAddr[name], "postgres"
		}
		s.vars[name] = v
	}
	var err error
	if s.cfg, err = config.Load(flag.NewFlagSet("split", flag.ContinueOnError), nil,
		func(k string) string { return base[k] }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.killAll)
	t.Cleanup(func() {
		if t.Failed() {
			s.dumpLogs()
		}
	})

	s.start("sim")
	apptest.Eventually(t, 30*time.Second, "the simulator's port and token", func() bool {
		_, err := os.Stat(filepath.Join(s.cfg.RunDir, "sim.token"))
		return err == nil && dialable(s.simAdr)
	})
	for _, name := range []string{"relay-1", "executor", "projector", "gateway-1"} {
		s.start(name)
	}
	apptest.Eventually(t, 60*time.Second, "gateway-1 serving", func() bool { return s.pingTLS("gateway-1") })
	s.start("relay-2") // after relay-1 took the lease: the standby
	s.start("gateway-2")
	apptest.Eventually(t, 60*time.Second, "gateway-2 serving", func() bool { return s.pingTLS("gateway-2") })

	if s.pg, err = pgxpool.New(context.Background(), s.cfg.PGURL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.pg.Close)
	store, err := app.KeyStore(s.cfg, s.pg)
	if err != nil {
		t.Fatal(err)
	}
	k, err := store.Create(context.Background(), keys.CreateParams{Logins: []int64{1001, 1002},
		Limits: keys.Limits{WeightPerMinute: 1 << 30, Orders10s: 1 << 30, Orders1m: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	httpc := s.https()
	for _, name := range []string{"gateway-1", "gateway-2"} {
		s.clients = append(s.clients, &gwclient.Client{BaseURL: "https://" + s.gwAddr[name], APIKey: k.APIKey,
			Secret: []byte(k.APISecret), HTTP: httpc})
	}
	token, err := remote.ReadToken(filepath.Join(s.cfg.RunDir, "sim.token"))
	if err != nil {
		t.Fatal(err)
	}
	if s.port, err = remote.NewClient(remote.ClientConfig{Addr: s.simAdr, Token: token}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.port.Close() })
	s.waitTradable()
	return s
}

func dialable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// proc is one running process; done closes once it exited (and was reaped).
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// start runs process name (again); its output, start and exit go to its log.
func (s *splitRun) start(name string) {
	s.t.Helper()
	logf, err := os.OpenFile(filepath.Join(s.logs, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=serve")
	for k, v := range s.vars[name] {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		s.t.Fatalf("start %s: %v", name, err)
	}
	fmt.Fprintf(logf, "--- started pid %d at %s\n", cmd.Process.Pid, time.Now().Format(time.RFC3339Nano))
	c := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		err := cmd.Wait()
		fmt.Fprintf(logf, "--- pid %d exited at %s: %v\n", cmd.Process.Pid, time.Now().Format(time.RFC3339Nano), err)
		logf.Close()
	}()
	s.mu.Lock()
	s.procs[name] = c
	s.mu.Unlock()
}

// kill9 kills process name with SIGKILL and waits until it is reaped.
func (s *splitRun) kill9(name string) {
	s.t.Helper()
	s.mu.Lock()
	c := s.procs[name]
	delete(s.procs, name)
	s.mu.Unlock()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		s.t.Fatalf("kill -9 %s: %v", name, err)
	}
	<-c.done
}

// killAll stops every process with SIGTERM, so that each leaves its consumer groups and the
// test's cleanup can delete them, and with SIGKILL what has not exited within 10 s.
func (s *splitRun) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.procs {
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
	}
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	expired := false
	for name, c := range s.procs {
		if !expired {
			select {
			case <-c.done:
			case <-timeout.C:
				expired = true
			}
		}
		if expired {
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		delete(s.procs, name)
	}
}

func (s *splitRun) pid(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.procs[name]; c != nil {
		return c.cmd.Process.Pid
	}
	return 0
}

func (s *splitRun) dumpLogs() {
	for _, name := range splitNames {
		b, _ := os.ReadFile(filepath.Join(s.logs, name+".log"))
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) > 25 {
			lines = lines[len(lines)-25:]
		}
		s.t.Logf("--- %s (last lines)\n%s", name, strings.Join(lines, "\n"))
	}
}

func (s *splitRun) https() *http.Client {
	s.t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(s.cfg.RunDir, "tls", "ca.pem"))
	if err != nil {
		s.t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 16}}
}

func (s *splitRun) pingTLS(name string) bool {
	if _, err := os.Stat(filepath.Join(s.cfg.RunDir, "tls", "ca.pem")); err != nil {
		return false
	}
	c := &gwclient.Client{BaseURL: "https://" + s.gwAddr[name], HTTP: s.https()}
	res, err := c.Public(context.Background(), http.MethodGet, "/v1/ping", nil)
	return err == nil && res.Status == http.StatusOK
}

// waitTradable waits until both gateways know BTCUSD with a quote and both logins' accounts.
func (s *splitRun) waitTradable() {
	s.t.Helper()
	ctx := context.Background()
	for _, c := range s.clients {
		apptest.Eventually(s.t, 90*time.Second, "a quote, and the accounts of 1001 and 1002, on "+c.BaseURL, func() bool {
			res, err := c.Keyed(ctx, http.MethodGet, "/v1/ticker/price", vals("symbol", "BTCUSD"))
			if err != nil || res.Status != http.StatusOK {
				return false
			}
			for _, login := range []string{"1001", "1002"} {
				res, err := c.Signed(ctx, http.MethodGet, "/v1/account", vals("login", login), gwclient.InQuery)
				if err != nil || res.Status != http.StatusOK {
					return false
				}
			}
			return true
		})
	}
}

// activeRelay names the relay process that holds the lease (its owner embeds its pid).
func (s *splitRun) activeRelay() string {
	s.t.Helper()
	var owner string
	var live bool
	apptest.Eventually(s.t, 30*time.Second, "a live relay lease", func() bool {
		err := s.pg.QueryRow(context.Background(),
			`SELECT owner, expires_at > now() FROM cmd.relay_leases WHERE name = 'mt5'`).Scan(&owner, &live)
		return err == nil && live
	})
	for _, name := range []string{"relay-1", "relay-2"} {
		if p := s.pid(name); p != 0 && strings.Contains(owner, fmt.Sprintf("-%d-", p)) {
			return name
		}
	}
	s.t.Fatalf("the lease's owner %q is none of the relay processes", owner)
	return ""
}

func vals(kv ...string) map[string][]string {
	v := map[string][]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		v[kv[i]] = []string{kv[i+1]}
	}
	return v
}
