-- rm.fence(ok, code, what) raises SQLSTATE code with message what unless ok is true. A
-- transaction that assumes something of the stored rows without reading them first checks it
-- with a fence ahead of its writes, in the same pipeline: a wrong assumption aborts the
-- transaction (its COMMIT rolls back) and the writer takes the long way. The trading
-- projection's one-pipeline transactions (projections/trading_fresh.go) use it.
CREATE OR REPLACE FUNCTION rm.fence(ok boolean, code text, what text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION USING ERRCODE = code, MESSAGE = what;
    END IF;
END
$$;
