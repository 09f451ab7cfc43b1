-- Command side (schema cmd) and the read-model schema (rm).
--
-- cmd holds the little state the write side keeps outside the event log: API keys, the
-- idempotency records of state-changing requests, operator switches and executor liveness.
-- It must never be written with synchronous_commit=off: an acknowledged request whose
-- idempotency record is lost could run twice. rm holds read models only (tables from
-- migration 0100 onwards); they can be rebuilt from Kafka.

CREATE SCHEMA IF NOT EXISTS cmd;
CREATE SCHEMA IF NOT EXISTS rm;

-- API keys issued by the broker (tradesvc keys create). The secret is needed in clear to
-- verify HMAC signatures, so it cannot be hashed: it is encrypted at rest with AES-256-GCM
-- under the service master key; the API key is the additional authenticated data, so a
-- ciphertext copied onto another row does not decrypt.
CREATE TABLE cmd.api_keys (
    id                bigserial PRIMARY KEY,
    api_key           text        NOT NULL UNIQUE CHECK (api_key ~ '^[A-Za-z0-9]{64}$'),
    secret_ciphertext bytea       NOT NULL,
    secret_nonce      bytea       NOT NULL CHECK (length(secret_nonce) = 12),
    logins            bigint[]    NOT NULL DEFAULT '{}',
    read_only         boolean     NOT NULL DEFAULT false,
    -- Source networks allowed to use the key, in CIDR notation; empty allows any address.
    allow_cidrs       text[]      NOT NULL DEFAULT '{}',
    -- Per-key rate limits; 0 means the service default.
    weight_per_minute integer     NOT NULL DEFAULT 0 CHECK (weight_per_minute >= 0),
    orders_10s        integer     NOT NULL DEFAULT 0 CHECK (orders_10s >= 0),
    orders_1m         integer     NOT NULL DEFAULT 0 CHECK (orders_1m >= 0),
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    -- Keys are never deleted, only revoked, so ids referenced by idempotency records and
    -- audit trails stay meaningful.
    revoked_at        timestamptz
);

-- Idempotency records: one per (API key, newClientOrderId), written before anything is
-- validated or queued. A retry is answered from here; a reuse for another operation kind or
-- login is -1133. Records are kept at least 24 hours (the spec), then may be purged by
-- created_at, after which a reused id counts as new.
--
-- Life cycle (status):
--   PENDING   inserted; the command is being validated / appended to Kafka. A failed append
--             answers -5009 and leaves the record PENDING (open), so a retry with the same
--             id tries again instead of being refused.
--   QUEUED    the command is durably in the log (operation_id identifies it).
--   ANSWERED  a final synchronous answer (a validation error or a response that will not
--             change) is stored in response; a retry returns it verbatim.
-- The trading code owns the exact values; this table only requires a non-empty status.
--
-- No foreign key to cmd.api_keys: keys are never deleted, and the key check would add a
-- lookup and a share lock on the key's row to every order of that key (the hot path).
CREATE TABLE cmd.idempotency (
    api_key_id      bigint      NOT NULL,
    client_order_id text        NOT NULL CHECK (length(client_order_id) BETWEEN 1 AND 36),
    -- Operation kind: PLACE_ORDER, MODIFY_ORDER, CANCEL_ORDER, CLOSE_POSITION,
    -- MODIFY_POSITION, CLOSE_ALL, ... (a different kind under the same id is -1133).
    operation       text        NOT NULL,
    login           bigint      NOT NULL,
    -- Hash of the canonical request parameters, to tell a faithful retry from a reuse of
    -- the id with different content (the service decides what a mismatch means).
    request_hash    bytea       NOT NULL,
    status          text        NOT NULL DEFAULT 'PENDING' CHECK (status <> ''),
    -- The id the command side gave the operation (the event/operation id carried in Kafka),
    -- so a retry can find the read model of what the first attempt started.
    operation_id    text,
    -- The stored answer for a retry (response body, error code, HTTP status), if any.
    response        jsonb,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (api_key_id, client_order_id)
);

-- Purging expired records scans by age.
CREATE INDEX idempotency_created_at ON cmd.idempotency (created_at);
-- Finding the record of an operation from the executor / projections side.
CREATE INDEX idempotency_operation_id ON cmd.idempotency (operation_id) WHERE operation_id IS NOT NULL;

-- Operator switches (tradesvc admin trading --on/--off). trading=off makes every TRADE
-- endpoint answer -1017.
CREATE TABLE cmd.switches (
    name       text PRIMARY KEY,
    value      text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO cmd.switches (name, value) VALUES ('trading', 'on') ON CONFLICT (name) DO NOTHING;

-- Liveness of executor instances: the gateway answers -5015 when no executor has been seen
-- recently (the execution path is not running).
CREATE TABLE cmd.executor_heartbeats (
    instance_id text PRIMARY KEY,
    seen_at     timestamptz NOT NULL DEFAULT now()
);
