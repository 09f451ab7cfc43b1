-- Account snapshots are ordered by when the relay observed them, not by the trade server's
-- update time, which can stand still while the figures change (a deposit within the same
-- second) or start at zero.
ALTER TABLE rm.accounts ADD COLUMN IF NOT EXISTS observed_at bigint NOT NULL DEFAULT 0;
