package executor_test

import (
	"errors"
	"testing"
	"time"

	"tradesvc/command"
	"tradesvc/command/executor"
	"tradesvc/events"
	"tradesvc/events/trading"
)

// earlyEnv is an executor whose records can carry its claims, as when the gateway runs in its
// process.
type earlyEnv struct {
	*exEnv
	early   *executor.EarlyClaims
	records *command.Records
}

func earlySetup(t *testing.T) *earlyEnv {
	t.Helper()
	e := exSetup(t)
	early := executor.NewEarlyClaims(e.clock.Now)
	e.cfg.Early = early
	records, err := command.NewRecords(e.pool)
	if err != nil {
		t.Fatal(err)
	}
	return &earlyEnv{exEnv: e, early: early, records: records}
}

// reads makes the executor read a first order of login, so that it knows the login's
// partition as one it holds.
func (e *earlyEnv) reads(login int64) {
	e.t.Helper()
	op := e.op(login)
	e.appendCmds(marketCmd(op, "EURUSD", "BUY", "0.10"))
	checkOutcome(e.t, e.outcome(op), op, trading.StatusFilled, 0, 10009)
}

// record stores the record of a market order of op as the gateway does, carrying claim, and
// returns the command's envelopes (not appended yet).
func (e *earlyEnv) record(op events.Operation, claim *command.EarlyClaim) []events.Envelope {
	e.t.Helper()
	envs, err := e.cmds.Wrap(marketCmd(op, "EURUSD", "BUY", "0.10"))
	if err != nil {
		e.t.Fatal(err)
	}
	rec := command.Record{APIKeyID: op.Requester.APIKeyID, ClientOrderID: op.ClientOrderID, Kind: trading.KindPlaceOrder,
		Login: op.Login, OperationID: op.OperationID, Tag: op.Tag, Attempt: 1, Envelopes: envs, Claim: claim}
	if got, err := e.records.Insert(e.ctx, []command.Record{rec}); err != nil || len(got) != 1 {
		e.t.Fatalf("insert the record: %v %v", got, err)
	}
	if !claim.Claimed {
		e.t.Fatal("the record's insert did not store its claim")
	}
	return envs
}

// claimed has the executor read login, then makes its claim of a new market order of login
// and stores the order's record with it; it returns the order, the claim and the command's
// envelopes (not appended yet).
func (e *earlyEnv) claimed(login int64) (events.Operation, *command.EarlyClaim, []events.Envelope) {
	e.t.Helper()
	e.reads(login)
	op := e.op(login)
	claim := e.early.ClaimEarly(login, op.OperationID)
	if claim == nil {
		e.t.Fatal("no claim for a login whose partition the executor reads")
	}
	return op, claim, e.record(op, claim)
}

// sentAt reads the time op's "sent" row carries.
func (e *earlyEnv) sentAt(op events.Operation) (time.Time, bool) {
	var at time.Time
	err := e.pool.QueryRow(e.ctx, `SELECT sent_at FROM cmd.executions WHERE operation_id = $1 AND attempt = 1`,
		op.OperationID).Scan(&at)
	return at, err == nil
}

// An order whose record carried the executor's claim is sent as soon as its command is read,
// under that claim: the row keeps the claim's time, and the order fills. Had the executor
// claimed it again, it would have found the row without knowing it as its own, taken it for
// a send it died in, and answered IN_DOUBT (the send deadline far off).
func TestExecutorSendsWhatItsRecordClaimed(t *testing.T) {
	e := earlySetup(t)
	e.start()
	const login = 1001
	if c := e.early.ClaimEarly(login, "op-before"); c != nil {
		t.Fatal("a claim for a login whose partition the executor was never seen to read")
	}
	op, claim, envs := e.claimed(login)
	if c := e.early.ClaimEarly(1002, "op-other"); c != nil {
		t.Fatal("a claim for a login the executor never read")
	}
	e.early.ClaimedEarly(claim, nil)
	if err := e.cmds.AppendEnvelopes(e.ctx, events.TopicCommands(), envs...); err != nil {
		t.Fatal(err)
	}
	got := e.outcome(op)
	checkOutcome(t, got, op, trading.StatusFilled, 0, 10009)
	if got.SentAt < claim.At.UnixMilli() || got.SentAt > got.DecidedAt {
		t.Fatalf("outcome sent at %d, want between the claim (%d) and the decision (%d)", got.SentAt,
			claim.At.UnixMilli(), got.DecidedAt)
	}
	if at, ok := e.sentAt(op); !ok || !at.Equal(claim.At) {
		t.Fatalf("sent row at %v (found %v), want the claim's %v", at, ok, claim.At)
	}
}

// A claim whose insert failed may be stored all the same (the answer was lost): the executor
// claims such an operation again, knows the row it finds as its own, and sends it.
func TestExecutorSendsWhatItsRecordMayHaveClaimed(t *testing.T) {
	e := earlySetup(t)
	e.start()
	const login = 1001
	op, claim, envs := e.claimed(login)
	e.early.ClaimedEarly(claim, errors.New("connection reset by peer"))
	if err := e.cmds.AppendEnvelopes(e.ctx, events.TopicCommands(), envs...); err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, e.outcome(op), op, trading.StatusFilled, 0, 10009)
}

// An executor that stops before it reads a command its record claimed deletes the claim's
// row, so that the next owner of the partition simply sends the order; left there, the row
// would read as a send the first executor died in (IN_DOUBT, then "did not execute").
func TestExecutorReleasesTheClaimsOfCommandsItWillNotRead(t *testing.T) {
	e := earlySetup(t)
	stop := e.start()
	const login = 1001
	op, claim, envs := e.claimed(login)
	e.early.ClaimedEarly(claim, nil)
	stop()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, ok := e.sentAt(op); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the claim's row is still there after its executor stopped")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if c := e.early.ClaimEarly(login, "op-after"); c != nil {
		t.Fatal("a claim for a partition the executor no longer reads")
	}
	e.cfg.Early = nil // the next owner, in another process
	e.start()
	if err := e.cmds.AppendEnvelopes(e.ctx, events.TopicCommands(), envs...); err != nil {
		t.Fatal(err)
	}
	checkOutcome(t, e.outcome(op), op, trading.StatusFilled, 0, 10009)
}
