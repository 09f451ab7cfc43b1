-- The trading write side: what the command handlers and the executor keep outside the log.
-- Written with synchronous commit (see 0001): losing a row here could run an operation twice.

-- The idempotency record also holds what a retry needs to finish the first request's work:
-- the attempt in flight, the operation's correlation tag, and the command envelopes that were
-- (or were being) appended, so that a retry of a record whose append failed re-appends exactly
-- the same events (same operation id and attempt, which consumers deduplicate on).
ALTER TABLE cmd.idempotency
    ADD COLUMN IF NOT EXISTS attempt  int  NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    ADD COLUMN IF NOT EXISTS tag      text,
    ADD COLUMN IF NOT EXISTS command  jsonb;

-- The executor's own record of what it sent: a row is inserted (synchronous commit) before an
-- operation goes to the trade server, and completed once its outcome is in the log. A command
-- redelivered after a crash finds its row and is reconciled with the trade server by tag
-- instead of being sent again.
CREATE TABLE IF NOT EXISTS cmd.executions (
    operation_id text        NOT NULL,
    attempt      int         NOT NULL,
    login        bigint      NOT NULL,
    tag          text        NOT NULL,
    kind         text        NOT NULL,
    sent_at      timestamptz NOT NULL DEFAULT now(),
    -- The ExecutionOutcome_v1 payload once appended to the executions topic; NULL while the
    -- outcome is unknown (sent, not answered yet, or the executor died in between).
    outcome      jsonb,
    decided_at   timestamptz,
    PRIMARY KEY (operation_id, attempt)
);
CREATE INDEX IF NOT EXISTS executions_undecided ON cmd.executions (sent_at) WHERE outcome IS NULL;
