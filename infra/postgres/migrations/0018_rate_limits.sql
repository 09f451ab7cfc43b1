-- Rate-limit state shared by gateways (--rate-limit-store postgres): one row per API key with
-- the fields of ratelimit.State (times in Unix ms) and a version for compare-and-set. The
-- rule itself stays in Go (ratelimit.State.Apply); a gateway writes the state it computed
-- only if the version it read is still current, so two gateways charging one key serialise.
-- UNLOGGED: counters are soft state read and written on every request; skipping the WAL
-- keeps each charge one cheap statement. A Postgres crash (not a clean restart) empties the
-- table, which forgets the current windows and bans: the gateways write their last known
-- state back on their next charge of each key.
CREATE UNLOGGED TABLE IF NOT EXISTS cmd.rate_limits (
    key_id           text    PRIMARY KEY,
    version          bigint  NOT NULL,
    minute           bigint  NOT NULL,
    ten_sec          bigint  NOT NULL,
    weight           integer NOT NULL,
    orders_10s       integer NOT NULL,
    orders_1m        integer NOT NULL,
    weight_throttled bigint  NOT NULL,
    orders_throttled bigint  NOT NULL,
    ban_until        bigint  NOT NULL,
    ban_level        integer NOT NULL,
    banned           boolean NOT NULL
);
