-- Every tick relayed from the trade server (projection "projection.clickhouse.market").
-- ReplacingMergeTree on (symbol, time_ms, seq): a redelivered tick collapses into one row.
CREATE TABLE IF NOT EXISTS ticks (
    symbol     String,
    time_ms    Int64,
    seq        UInt64,
    bid        Decimal(18, 8),
    ask        Decimal(18, 8),
    last       Decimal(18, 8),
    volume     Int64,
    event_date Date
) ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(event_date)
ORDER BY (symbol, time_ms, seq)
