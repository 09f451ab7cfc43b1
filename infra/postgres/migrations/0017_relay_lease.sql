-- The relay's lease: one active relay per trade server (issue 17). A relay that holds the row
-- (owner, token) relays; the others stand by and take the row over once expires_at, on
-- Postgres' clock, has passed. Every takeover increments token, the fencing token: a relay
-- saves its cursors only while the row still carries its token, so an owner that was paused
-- past its expiry cannot move a cursor after a standby took over.
CREATE TABLE IF NOT EXISTS cmd.relay_leases (
    name        text        PRIMARY KEY,
    owner       text        NOT NULL,
    token       bigint      NOT NULL,
    expires_at  timestamptz NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()
);
