-- Read models of reference data (symbols, the trade server, accounts), built by the
-- projection "projection.reference" from the compacted reference topic. Rebuildable from
-- Kafka at any time; every upsert only moves a row forward in time, so redelivery and replay
-- never move it back.

CREATE TABLE IF NOT EXISTS rm.symbols (
    symbol      text PRIMARY KEY,
    -- spec is the SymbolSpecified_v1 payload (decimals as strings, platform enums as integers).
    spec        jsonb  NOT NULL,
    spec_time   bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS rm.server (
    id                        int PRIMARY KEY CHECK (id = 1),
    name                      text   NOT NULL,
    time_zone_offset_minutes  int    NOT NULL,
    info_time                 bigint NOT NULL
);

CREATE TABLE IF NOT EXISTS rm.accounts (
    login          bigint PRIMARY KEY,
    grp            text    NOT NULL,
    currency       text    NOT NULL,
    leverage       int     NOT NULL,
    demo           boolean NOT NULL,
    trade_allowed  boolean NOT NULL,
    active         boolean NOT NULL,
    balance        numeric NOT NULL,
    credit         numeric NOT NULL,
    equity         numeric NOT NULL,
    margin         numeric NOT NULL,
    free_margin    numeric NOT NULL,
    profit         numeric NOT NULL,
    margin_level   numeric NOT NULL,
    update_time    bigint  NOT NULL
);

-- Where the relay of trade-server feeds to Kafka stands, per feed. Command side: it decides
-- what is appended to the log, so it is written with synchronous commit.
CREATE TABLE IF NOT EXISTS cmd.relay_cursors (
    name        text PRIMARY KEY,
    position    bigint NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now()
);
