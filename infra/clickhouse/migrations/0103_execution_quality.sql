-- Execution quality for analysts (projection "projection.clickhouse.execution"): one row per
-- operation recorded in the command log (order placements, order modifications and
-- cancellations, position closes and SL/TP changes; a sweep's legs are position closes),
-- with the quote the gateway validated it against, its fill and slippage, and its timeline.
-- See docs/analytics.md for every column's unit.
--
-- The row of an operation is rewritten whenever a fact about it arrives (its command, the
-- executor's outcome, deals that fill it hours later, the pending order it placed), each time
-- whole and with version + 1; ReplacingMergeTree(version) keeps the newest, so read it with
-- FINAL. `state` holds the facts the row was derived from (JSON), so that the projection can
-- rewrite a row without the facts that came before; a redelivered or replayed fact changes
-- nothing and writes nothing. No partitioning: a row's key must stay in one part family for
-- its versions to collapse, and the time of an operation is unknown until its command is read.
CREATE TABLE IF NOT EXISTS execution_quality (
    login                  Int64,
    tag                    String,
    version                UInt64,
    operation_id           String,
    recorded               UInt8,
    decided                UInt8,
    kind                   String,
    api_key_id             Int64,
    client_order_id        String,
    sweep_id               String,
    attempt                UInt32,
    symbol                 String,
    side                   String,
    type                   String,
    requested_volume       Nullable(Decimal(18, 8)),
    requested_price        Nullable(Decimal(18, 8)),
    stop_limit_price       Nullable(Decimal(18, 8)),
    quote_bid              Nullable(Decimal(18, 8)),
    quote_ask              Nullable(Decimal(18, 8)),
    quote_time_ms          Nullable(Int64),
    arrival_price          Nullable(Decimal(18, 8)),
    status                 String,
    code                   Nullable(Int32),
    mt5_retcode            Nullable(Int32),
    msg                    String,
    unanswered             UInt8,
    reconciled             UInt8,
    order_id               Nullable(Int64),
    deal_id                Nullable(Int64),
    position_id            Nullable(Int64),
    deals                  UInt32,
    deal_ids               Array(Int64),
    executed_volume        Decimal(18, 8),
    fill_price             Nullable(Decimal(18, 8)),
    slippage_points        Nullable(Decimal(18, 4)),
    slippage               Nullable(Decimal(18, 4)),
    currency               String,
    received_ms            Int64,
    queued_ms              Int64,
    sent_ms                Nullable(Int64),
    answered_ms            Nullable(Int64),
    decided_ms             Nullable(Int64),
    first_deal_time_ms     Nullable(Int64),
    first_deal_observed_ms Nullable(Int64),
    latency_answer_ms      Nullable(Int64),
    latency_fill_ms        Nullable(Int64),
    received_date          Date,
    state                  String
) ENGINE = ReplacingMergeTree(version)
ORDER BY (login, tag)
