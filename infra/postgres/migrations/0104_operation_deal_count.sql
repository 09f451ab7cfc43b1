-- How many distinct trading deals confirm an operation's fill. The spec confirms fills from
-- deals: a RESULT wait for a market order or a close ends once they are projected, so a
-- client that reads its positions right after a FILLED answer sees the position the fill made
-- (the deal, the position and the account facts are projected in the same transaction).
ALTER TABLE rm.operations ADD COLUMN IF NOT EXISTS deal_count int NOT NULL DEFAULT 0;

-- The attempt the derived columns were computed for: a newer attempt changes what readers
-- see (the older attempt's answer no longer holds), so it writes an OPERATION change too.
ALTER TABLE rm.operations ADD COLUMN IF NOT EXISTS derived_attempt int NOT NULL DEFAULT 0;

-- Whether the derived columns already took the executor's outcome of that attempt into
-- account: its arrival is news to a RESULT wait even when it changes nothing else (a fill
-- confirmed by deals first, then the answer).
ALTER TABLE rm.operations ADD COLUMN IF NOT EXISTS derived_decided boolean NOT NULL DEFAULT false;
