-- Exactly-once read models. Every Postgres projection stores the log positions it applied
-- (per topic and partition, the offset after the last message) in the same transaction as
-- its writes, and every session starts from them: a crash of the projector or of Postgres at
-- any moment then loses nothing and applies nothing twice. Kafka's committed offsets are
-- only a mirror for lag metrics.
CREATE TABLE IF NOT EXISTS rm.projection_offsets (
    projection   text        NOT NULL,
    topic        text        NOT NULL,
    partition    int         NOT NULL,
    next_offset  bigint      NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (projection, topic, partition)
);

-- The change feed is numbered per partition of the trading topics instead of by one global
-- sequence under one global lock: each partition's writer takes the next numbers from its
-- head row (locked until commit, so a partition's numbers follow its commit order) and the
-- partitions never wait for each other. A login's changes all fall in one partition.
-- Rows written before this migration keep part -1 (readers start at the heads and never
-- read them; they age out with the retention).
CREATE TABLE IF NOT EXISTS rm.change_heads (
    part  int    PRIMARY KEY,
    seq   bigint NOT NULL
);
ALTER TABLE rm.changes ADD COLUMN part int NOT NULL DEFAULT -1;
ALTER TABLE rm.changes ALTER COLUMN part DROP DEFAULT;
ALTER TABLE rm.changes DROP CONSTRAINT changes_pkey;
ALTER TABLE rm.changes ALTER COLUMN seq DROP DEFAULT;
ALTER TABLE rm.changes ADD PRIMARY KEY (part, seq);
DROP SEQUENCE IF EXISTS rm.changes_seq_seq;
