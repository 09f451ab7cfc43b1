-- What projection.trading needs beyond 0102.

-- When the newest attempt's outcome was decided: with the request time, the deals' times and
-- the followed order's update time it makes updated_at a function of the facts alone, so a
-- replayed read model equals the live one.
ALTER TABLE rm.operations ADD COLUMN IF NOT EXISTS out_decided_at bigint;

-- Order facts and position closes find the operations to re-derive by these columns.
CREATE INDEX IF NOT EXISTS operations_out_order ON rm.operations (out_order_id) WHERE out_order_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS operations_target_position ON rm.operations (target_position_id)
    WHERE target_position_id IS NOT NULL;

-- Balance and credit as the trade server's AccountChanged facts report them (seq-guarded), so
-- a redelivered fact writes no second ACCOUNT_UPDATE. rm.accounts (reference projection) holds
-- the full account snapshots that GET /v1/account reads.
CREATE TABLE IF NOT EXISTS rm.account_balances (
    login        bigint  PRIMARY KEY,
    balance      numeric NOT NULL,
    credit       numeric NOT NULL,
    update_time  bigint  NOT NULL,
    seq          bigint  NOT NULL
);

