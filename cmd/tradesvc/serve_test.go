package main

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"tradesvc/cmd/tradesvc/app/apptest"
)

// A role that cannot go on stops the process: `tradesvc serve` with its HTTPS port already
// taken logs that the gateway cannot continue and exits non-zero within 5 s of that line,
// every other role (executor, projector, simulator, metrics) stopped with it.
func TestServeExitsNonZeroWhenTheGatewayCannotListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	vars := apptest.Vars(t)
	vars["TRADESVC_LISTEN"] = taken.Addr().String()
	vars["TRADESVC_LOG_LEVEL"] = "info"
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childArgs+"=serve")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_, _ = cmd.Process.Wait()
		}
	})
	failed := make(chan time.Time, 1)
	var logged strings.Builder
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			logged.WriteString(line + "\n")
			if strings.Contains(line, "role cannot continue") && strings.Contains(line, `"role":"gateway"`) &&
				strings.Contains(line, "address already in use") {
				select {
				case failed <- time.Now():
				default:
				}
			}
		}
	}()
	exited := make(chan error, 1)
	go func() {
		<-scanDone // all of stderr read before Wait closes the pipe
		exited <- cmd.Wait()
	}()
	var failedAt time.Time
	select {
	case failedAt = <-failed:
	case err := <-exited:
		t.Fatalf("tradesvc exited (%v) without logging that the gateway cannot continue:\n%s", err, logged.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("no log line says the gateway cannot continue:\n%s", logged.String())
	}
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() == 0 {
			t.Fatalf("tradesvc exited with %v, want a non-zero status:\n%s", err, logged.String())
		}
		if took := time.Since(failedAt); took > 5*time.Second {
			t.Errorf("tradesvc took %s to exit after the gateway failed, want at most 5s", took)
		}
		if !strings.Contains(logged.String(), "tradesvc serve: stopped with errors: gateway: gateway listen") {
			t.Errorf("the exit message does not name the failed role:\n%s", logged.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("tradesvc still running 5s after the gateway failed:\n%s", logged.String())
	}
}
