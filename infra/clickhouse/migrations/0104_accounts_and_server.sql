-- The account and trade-server dimensions of the deal history (projection
-- "projection.clickhouse.reference", from the compacted reference topic), so that analysts
-- can group deals by account currency and group, and by the trade server's day.
-- accounts: one row per login, rewritten when its group, currency, leverage or flags change,
-- versioned by when the relay observed the account (ReplacingMergeTree(observed_ms): a
-- replayed older snapshot never wins). Read it with FINAL.
CREATE TABLE IF NOT EXISTS accounts (
    login         Int64,
    grp           String,
    currency      String,
    leverage      Int32,
    demo          UInt8,
    trade_allowed UInt8,
    observed_ms   Int64
) ENGINE = ReplacingMergeTree(observed_ms)
ORDER BY login;
-- trade_server: the trade server's name and time-zone offset (one row, id = 1), versioned by
-- the time of its record.
CREATE TABLE IF NOT EXISTS trade_server (
    id                       UInt8,
    name                     String,
    time_zone_offset_minutes Int32,
    time_ms                  Int64
) ENGINE = ReplacingMergeTree(time_ms)
ORDER BY id
