-- One-minute bars of the bid price. The projection rewrites a bar's full state (open, high,
-- low, close, count) each time it changes, with ver = the sequence of the last tick in it;
-- ReplacingMergeTree(ver) keeps the newest state, and readers use FINAL (or argMax by ver),
-- so a replay or redelivery writes the same rows again and never double counts.
CREATE TABLE IF NOT EXISTS bars_1m (
    symbol     String,
    open_time  Int64,
    open       Decimal(18, 8),
    high       Decimal(18, 8),
    low        Decimal(18, 8),
    close      Decimal(18, 8),
    ticks      UInt64,
    ver        UInt64,
    event_date Date
) ENGINE = ReplacingMergeTree(ver)
PARTITION BY toYYYYMM(event_date)
ORDER BY (symbol, open_time)
