-- The change feed's frames are sent to user-stream clients as they are stored. jsonb keeps a
-- normalised form (keys reordered, spaces after colons and commas), so a frame read back no
-- longer reads like the compact JSON of every other frame; json keeps the text as written.
-- Nothing queries inside the column, and the table holds only the retention window's rows.
ALTER TABLE rm.changes ALTER COLUMN event TYPE json USING event::json;
