-- The newest version of each execution_quality row, for the projection's own use (not an
-- analyst's table): before it rewrites a row, the projection reads the versions of the keys its
-- batch touches. Read from execution_quality that costs an index granule of 8,192 rows per
-- login and part, so the rows read grow with the table and the accounts a batch touches
-- (docs/benchmarks.md, twenty-fifth session); this narrow table with granules of 256 reads a
-- thirty-second of that. The projection writes a row's version here before the row itself, so
-- a version here is never older than the table's. The INSERT fills it from the rows already
-- there; run again (an interrupted migration) it adds copies, which ReplacingMergeTree and
-- max(version) both ignore.
CREATE TABLE IF NOT EXISTS execution_quality_versions (
    login   Int64,
    tag     String,
    version UInt64
) ENGINE = ReplacingMergeTree(version)
ORDER BY (login, tag)
SETTINGS index_granularity = 256;
INSERT INTO execution_quality_versions (login, tag, version)
SELECT login, tag, max(version) FROM execution_quality GROUP BY login, tag;
