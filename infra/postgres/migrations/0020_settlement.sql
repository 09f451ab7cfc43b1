-- Settling what is unknown, the dispatch sweeper and the trade-server link
-- (docs/trading.md, "Settling what is unknown" and "The dispatch window").

-- Each executor heartbeat carries whether that executor reaches the trade server: TRADE
-- endpoints answer -5015 before queueing anything when no live executor does. An executor of
-- an earlier version writes no link: it counts as linked, as it did.
ALTER TABLE cmd.executor_heartbeats
    ADD COLUMN IF NOT EXISTS link_up boolean NOT NULL DEFAULT true;

-- The attempts the executor settles in the background: outcomes IN_DOUBT, or sent without an
-- in-band answer. A settlement replaces the outcome, so a settled attempt leaves the index.
CREATE INDEX IF NOT EXISTS executions_unsettled ON cmd.executions (sent_at)
    WHERE outcome->>'status' = 'IN_DOUBT' OR outcome->>'unanswered' = 'true';

-- The dispatch sweeper reads the records that crossed the dispatch window since its last
-- round: first attempts by created_at (indexed since 0001), later attempts by the time their
-- attempt was raised. Later attempts are rare, so this index costs the order path nothing.
CREATE INDEX IF NOT EXISTS idempotency_later_attempts ON cmd.idempotency (updated_at) WHERE attempt > 1;
