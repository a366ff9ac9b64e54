-- sqlock schema v4 (PostgreSQL): select_for_update tokens that survive crashes and failovers.
-- A select_for_update grant draws nextval() in a transaction that is still open when lock()
-- returns (and commits asynchronously), and PostgreSQL logs a sequence 32 values ahead without
-- flushing that record: after crash recovery the sequence can restart below tokens already
-- handed out. Two tables close that gap without a durable commit per grant:
--   - {token_hwm}: a durable high-water mark. Every select_for_update token returned by lock()
--     is <= it: a process raises it (durable commit, in blocks) before handing out a larger one.
--   - {token_incarnation}: UNLOGGED, so PostgreSQL empties it in every crash recovery (server,
--     OS or backend crash) and on a promoted standby, but keeps it across a clean restart.
--     select_for_update reads it with every grant; when it is empty, the token is not handed
--     out, {recover_tokens}() moves the sequence past the high-water mark and fills it again.
CREATE TABLE IF NOT EXISTS {token_hwm} (
    id    integer PRIMARY KEY CHECK (id = 1),
    value bigint NOT NULL
);
-- Every token handed out so far is <= the sequence's current value.
INSERT INTO {token_hwm} (id, value) SELECT 1, last_value FROM {token_seq}
ON CONFLICT (id) DO NOTHING;

-- Left empty here: the first select_for_update grant runs the recovery (a re-run of this
-- migration must never mark a crashed incarnation as recovered).
CREATE UNLOGGED TABLE IF NOT EXISTS {token_incarnation} (
    id integer PRIMARY KEY CHECK (id = 1)
);

-- Moves the sequence past the high-water mark, then marks this incarnation as recovered.
-- It draws the values instead of calling setval(): a draw never moves the sequence back, even
-- while other sessions draw (unique_key grants) at the same time, and needs only USAGE. The gap
-- is at most about one block (65536 values, ~70 ms). Returns how many values were skipped.
-- Concurrent recoveries queue on an advisory lock; the later ones find the marker and return.
CREATE OR REPLACE FUNCTION {recover_tokens}() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    ceiling bigint;
    drawn   bigint;
BEGIN
    PERFORM pg_advisory_xact_lock(1936483695, hashtext('{token_incarnation}'));
    IF EXISTS (SELECT 1 FROM {token_incarnation}) THEN
        RETURN 0;
    END IF;
    SELECT value INTO ceiling FROM {token_hwm} WHERE id = 1;
    drawn := nextval('{token_seq}');
    IF drawn < ceiling THEN
        PERFORM nextval('{token_seq}') FROM generate_series(1, ceiling - drawn);
    END IF;
    INSERT INTO {token_incarnation} (id) VALUES (1) ON CONFLICT (id) DO NOTHING;
    RETURN GREATEST(ceiling - drawn, 0);
END
$fn$;
