-- sqlock schema v6 (SQLite): scheduled jobs (sqlock run --once-per, sqlock::job).
-- Times are integer milliseconds since 1970 UTC on the database clock (the same in every
-- backend, so the slot rule's arithmetic is the same code everywhere).
-- {jobs}: one row per job name: what status, Prometheus and "sqlock check" read. Counters only
-- grow (Prometheus counters); skipped firings are counted here, never stored one by one.
CREATE TABLE IF NOT EXISTS {jobs} (
    name                    TEXT NOT NULL PRIMARY KEY
                            CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 255),
    period_ms               INTEGER NOT NULL DEFAULT 0,
    first_fired_ms          INTEGER NOT NULL,
    last_fired_ms           INTEGER NOT NULL,
    last_outcome            TEXT NOT NULL DEFAULT '',
    last_started_ms         INTEGER NOT NULL DEFAULT 0,
    last_duration_ms        INTEGER NOT NULL DEFAULT 0,
    last_success_started_ms INTEGER NOT NULL DEFAULT 0,
    last_success_ended_ms   INTEGER NOT NULL DEFAULT 0,
    succeeded               INTEGER NOT NULL DEFAULT 0,
    failed                  INTEGER NOT NULL DEFAULT 0,
    lost                    INTEGER NOT NULL DEFAULT 0,
    abandoned               INTEGER NOT NULL DEFAULT 0,
    skipped                 INTEGER NOT NULL DEFAULT 0
);
-- {job_runs}: the ledger, one row per attempt. The fencing token of the attempt's grant is
-- unique per name, so (name, token) identifies an attempt. outcome: running, succeeded, failed,
-- lost, abandoned. ended_ms/duration_ms are NULL while running; exit_status/term_signal are NULL
-- when there is none (term_signal: the command was killed by that signal).
CREATE TABLE IF NOT EXISTS {job_runs} (
    name        TEXT NOT NULL,
    token       INTEGER NOT NULL,
    slot        TEXT NOT NULL,
    owner       TEXT NOT NULL,
    host        TEXT NOT NULL,
    pid         INTEGER NOT NULL,
    period_ms   INTEGER NOT NULL,
    started_ms  INTEGER NOT NULL,
    -- the slot's anchor: when its opening firing fired (database clock, before waiting for
    -- the lock); every attempt of the slot (takeovers) carries it
    slot_fired_ms INTEGER NOT NULL,
    ended_ms    INTEGER,
    duration_ms INTEGER,
    exit_status INTEGER,
    term_signal INTEGER,
    outcome     TEXT NOT NULL,
    message     TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (name, token)
);
CREATE INDEX IF NOT EXISTS {job_runs_slot_idx} ON {job_runs} (name, slot);
CREATE INDEX IF NOT EXISTS {job_runs_started_idx} ON {job_runs} (name, slot_fired_ms);
CREATE INDEX IF NOT EXISTS {job_runs_prune_idx} ON {job_runs} (started_ms);
