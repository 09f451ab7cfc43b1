-- Listen keys of the user data stream (POST/PUT/DELETE /v1/listenKey). Command-side state:
-- every gateway instance must see the same keys, and a listen key handed to a client must
-- survive a restart, so they live here (synchronous commit), not in a read model.
--
-- At most one active listen key per API key: the partial unique index holds one row per key
-- with deleted_at NULL. A key past expires_at is no longer active; the next POST retires it
-- (sets deleted_at) and inserts a new one in the same transaction. Rows are kept (never
-- deleted) like API keys; they are small and one per POST after a lapse.
CREATE TABLE IF NOT EXISTS cmd.listen_keys (
    listen_key  text        PRIMARY KEY CHECK (listen_key ~ '^[A-Za-z0-9]{64}$'),
    api_key_id  bigint      NOT NULL,
    -- The public API key (not a secret), so a stream can re-read the key's scope and
    -- revocation through the gateway's key cache, which is keyed by it.
    api_key     text        NOT NULL,
    created_at  timestamptz NOT NULL,
    -- 60 minutes (configurable) from creation or the last keepalive (PUT).
    expires_at  timestamptz NOT NULL,
    deleted_at  timestamptz
);

CREATE UNIQUE INDEX IF NOT EXISTS listen_keys_one_per_api_key ON cmd.listen_keys (api_key_id)
    WHERE deleted_at IS NULL;
