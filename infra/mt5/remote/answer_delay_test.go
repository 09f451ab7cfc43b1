package remote

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// `tradesvc sim fault --answer-delay` reaches the simulator's Fault.AnswerDelay, next to the
// latency, and shows in the returned and the current fault state.
func TestSimCLIFaultAnswerDelayReachesTheSimulator(t *testing.T) {
	st := startSim(t)
	tok := writeToken(t, testToken)
	code, out, errs := st.cli(t, tok, "fault", "--mode", "none", "--answer-delay", "3s", "--latency", "20ms")
	if code != 0 || errs != "" {
		t.Fatalf("fault --answer-delay: exit %d, stderr %q", code, errs)
	}
	if f := decodeJSON[FaultState](t, out); f != (FaultState{Mode: "none", LatencyMs: 20, AnswerDelayMs: 3000}) {
		t.Fatalf("printed state %+v", f)
	}
	if f := st.sim.CurrentFault(); f.AnswerDelay != 3*time.Second || f.Latency != 20*time.Millisecond {
		t.Fatalf("simulator fault %+v", f)
	}
	code, out, _ = st.cli(t, tok, "state")
	if s := decodeJSON[StateResult](t, out); code != 0 || s.Fault.AnswerDelayMs != 3000 {
		t.Fatalf("state: %d %+v", code, s)
	}
	// Setting a fault without the flag clears the delay.
	st.cli(t, tok, "fault", "--mode", "none")
	if f := st.sim.CurrentFault(); f.AnswerDelay != 0 {
		t.Fatalf("fault none kept the answer delay: %+v", f)
	}
}

func TestSimCLIFaultRefusesBadAnswerDelay(t *testing.T) {
	st := startSim(t)
	tok := writeToken(t, testToken)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"fault", "--mode", "none", "--answer-delay", "soon"}, "invalid value"},
		{[]string{"fault", "--mode", "none", "--answer-delay", "-1s"}, "must not be negative"},
		{[]string{"fault", "--mode", "none", "--answer-delay", "1500us"}, "whole milliseconds"},
	} {
		code, out, errs := st.cli(t, tok, c.args...)
		if code != exitUsage || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.args, code, out, errs, c.want)
		}
	}
	if f := st.sim.CurrentFault(); f.AnswerDelay != 0 {
		t.Errorf("fault changed to %+v", f)
	}
}

// Over the admin API: the delay is set and read back, and a negative one is a bad request.
func TestSimAdminAnswerDelayOverWire(t *testing.T) {
	st := startSim(t)
	a := st.client.Admin()
	ctx := context.Background()
	got, err := a.SetFault(ctx, FaultState{Mode: "no-answer", AnswerDelayMs: 250})
	if err != nil || got != (FaultState{Mode: "no-answer", AnswerDelayMs: 250}) {
		t.Fatalf("set: %+v, %v", got, err)
	}
	if f := st.sim.CurrentFault(); f.AnswerDelay != 250*time.Millisecond {
		t.Fatalf("simulator fault %+v", f)
	}
	if _, err := a.SetFault(ctx, FaultState{Mode: "none", AnswerDelayMs: -1}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("negative delay: %v, want ErrBadRequest", err)
	}
	if f, err := a.CurrentFault(ctx); err != nil || f.AnswerDelayMs != 250 {
		t.Fatalf("current: %+v, %v", f, err)
	}
}
