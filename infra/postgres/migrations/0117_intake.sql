-- The service's intake, as each component that feeds the read models reports it about once a
-- second: the trading projection per partition of the trading topics, the relay for all of
-- them (part -1). behind_since is when the component last fell behind and has not caught up
-- since (NULL: caught up); reported_at when it last said so. Gateways read it with the change
-- feed and close the user streams of the logins whose intake lags (docs/streams.md).
CREATE TABLE IF NOT EXISTS rm.intake (
    source        text        NOT NULL,
    part          int         NOT NULL,
    behind_since  timestamptz,
    reported_at   timestamptz NOT NULL,
    PRIMARY KEY (source, part)
);
