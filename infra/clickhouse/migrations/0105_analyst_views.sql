-- Views an analyst can use as they are (docs/analytics.md). Plain views: they read the
-- tables with FINAL at query time, so they are always as current as the tables and need no
-- backfill after a replay.
--
-- pnl_daily: the trading deals (action 0 buy, 1 sell) of each login per day, in the
-- account's currency (USC is never added to USD: currency is part of the key). day is the
-- UTC day of the deal time, server_day the trade server's day (its time-zone offset): a deal
-- falls in exactly one row; sum over server_day for UTC days, over day for server days.
CREATE VIEW IF NOT EXISTS pnl_daily AS
SELECT login, currency, day, server_day,
       count() AS deal_count,
       sum(deal_volume) AS volume,
       sum(deal_profit) AS profit,
       sum(deal_commission) AS commission,
       sum(deal_swap) AS swap,
       sum(deal_profit + deal_commission + deal_swap) AS net
FROM (
    SELECT login, volume AS deal_volume, profit AS deal_profit, commission AS deal_commission, swap AS deal_swap,
           addDays(toDate('1970-01-01'), intDiv(time_ms, 86400000)) AS day,
           addDays(toDate('1970-01-01'),
                   intDiv(time_ms + 60000 * (SELECT toInt64(any(time_zone_offset_minutes)) FROM trade_server FINAL), 86400000)) AS server_day
    FROM deals FINAL
    WHERE action IN (0, 1)
) ANY LEFT JOIN (SELECT login, currency FROM accounts FINAL) USING login
GROUP BY login, currency, day, server_day;
-- execution_daily: per symbol and UTC day of receipt, the decided operations, how many
-- filled (in part or whole), were rejected or left in doubt, and the percentiles of slippage
-- (points, positive = worse for the client) and of latency (ms from receipt to the trade
-- server's answer, and to the first deal the service observed).
CREATE VIEW IF NOT EXISTS execution_daily AS
SELECT symbol, received_date AS day,
       count() AS operations,
       countIf(executed_volume > 0) AS fills,
       countIf(status = 'REJECTED') AS rejections,
       countIf(status = 'IN_DOUBT') AS in_doubt,
       sum(executed_volume) AS executed_lots,
       quantileExact(0.5)(slippage_points) AS slippage_points_p50,
       quantileExact(0.9)(slippage_points) AS slippage_points_p90,
       quantileExact(0.99)(slippage_points) AS slippage_points_p99,
       max(slippage_points) AS slippage_points_max,
       quantileExact(0.5)(latency_answer_ms) AS answer_ms_p50,
       quantileExact(0.9)(latency_answer_ms) AS answer_ms_p90,
       quantileExact(0.99)(latency_answer_ms) AS answer_ms_p99,
       quantileExact(0.5)(latency_fill_ms) AS fill_ms_p50,
       quantileExact(0.9)(latency_fill_ms) AS fill_ms_p90,
       quantileExact(0.99)(latency_fill_ms) AS fill_ms_p99
FROM execution_quality FINAL
WHERE recorded = 1 AND decided = 1
GROUP BY symbol, day;
-- execution_rejections_daily: the rejected operations per symbol, UTC day of receipt, the
-- service's code and the trade server's return code (NULL when it gave none).
CREATE VIEW IF NOT EXISTS execution_rejections_daily AS
SELECT symbol, received_date AS day, code, mt5_retcode, count() AS rejections
FROM execution_quality FINAL
WHERE recorded = 1 AND status = 'REJECTED'
GROUP BY symbol, day, code, mt5_retcode
