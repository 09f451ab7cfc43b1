// Package leakcheck fails a package's tests when they leave goroutines running: every test
// package of the module calls Main from its TestMain (TestEveryTestPackageChecksForLeaks
// holds them to it), so `make test` fails on a goroutine a test or the code under test
// forgot to stop. It wraps go.uber.org/goleak with the few goroutines that libraries keep
// for the life of a process, which no test can stop.
package leakcheck

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// processWide are goroutines libraries start once per process and never stop.
func processWide() []goleak.Option {
	return []goleak.Option{
		// sarama's metrics (go-metrics) tick every meter from one process-wide goroutine.
		goleak.IgnoreAnyFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"),
		// fasthttp (under Fiber) refreshes the Date header from one process-wide goroutine,
		// and its worker pool's cleaner outlives a stopped server by up to 10 s.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"),
		// fasthttp's client (the benchmarks' load generator) caches resolved addresses in
		// one process-wide dialer, and each HostClient's idle-connection cleaner sleeps out
		// its idle timeout (10 s) before it notices there is nothing left to clean.
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*TCPDialer).tcpAddrsClean"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*HostClient).connsCleaner"),
	}
}

// Options are the options Main uses: the process-wide goroutines above plus extra.
func Options(extra ...goleak.Option) []goleak.Option { return append(processWide(), extra...) }

// Main runs the package's tests and then, if they passed, fails the run (exit status 1,
// the goroutines' stacks on stderr) when goroutines other than the process-wide ones are
// still running. Call it from TestMain: func TestMain(m *testing.M) { leakcheck.Main(m) }.
func Main(m *testing.M, extra ...goleak.Option) {
	code := m.Run()
	if code == 0 {
		// Keep-alive connections of clients that used the default transport are not leaks
		// of the code under test.
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		if err := goleak.Find(Options(extra...)...); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines still running after the tests passed:\n%v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
