-- Deal history for analysts (projection "projection.clickhouse.deals"): every deal the trade
-- server reported, trading and balance operations alike, keyed by its ticket (the natural key).
CREATE TABLE IF NOT EXISTS deals (
    login       Int64,
    deal_id     Int64,
    order_id    Int64,
    position_id Int64,
    symbol      String,
    action      Int32,
    entry       Int32,
    reason      Int32,
    volume      Decimal(18, 8),
    price       Decimal(18, 8),
    profit      Decimal(18, 4),
    commission  Decimal(18, 4),
    swap        Decimal(18, 4),
    comment     String,
    time_ms     Int64,
    seq         UInt64,
    event_date  Date
) ENGINE = ReplacingMergeTree(seq)
PARTITION BY toYYYYMM(event_date)
ORDER BY (login, deal_id)
