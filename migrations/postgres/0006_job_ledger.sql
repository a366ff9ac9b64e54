-- sqlock schema v6 (PostgreSQL): scheduled jobs (sqlock run --once-per, sqlock::job).
-- Times are integer milliseconds since 1970 UTC on the database clock (the same in every
-- backend, so the slot rule's arithmetic is the same code everywhere).
-- {jobs}: one row per job name: what status, Prometheus and "sqlock check" read. Counters only
-- grow (Prometheus counters); skipped firings are counted here, never stored one by one.
CREATE TABLE IF NOT EXISTS {jobs} (
    name                    text COLLATE "C" NOT NULL PRIMARY KEY
                            CHECK (octet_length(name) BETWEEN 1 AND 255),
    period_ms               bigint NOT NULL DEFAULT 0,
    first_fired_ms          bigint NOT NULL,
    last_fired_ms           bigint NOT NULL,
    last_outcome            text NOT NULL DEFAULT '',
    last_started_ms         bigint NOT NULL DEFAULT 0,
    last_duration_ms        bigint NOT NULL DEFAULT 0,
    last_success_started_ms bigint NOT NULL DEFAULT 0,
    last_success_ended_ms   bigint NOT NULL DEFAULT 0,
    succeeded               bigint NOT NULL DEFAULT 0,
    failed                  bigint NOT NULL DEFAULT 0,
    lost                    bigint NOT NULL DEFAULT 0,
    abandoned               bigint NOT NULL DEFAULT 0,
    skipped                 bigint NOT NULL DEFAULT 0
);
-- {job_runs}: the ledger, one row per attempt. The fencing token of the attempt's grant is
-- unique per name, so (name, token) identifies an attempt. outcome: running, succeeded, failed,
-- lost, abandoned. ended_ms/duration_ms are NULL while running; exit_status/term_signal are NULL
-- when there is none (term_signal: the command was killed by that signal).
CREATE TABLE IF NOT EXISTS {job_runs} (
    name        text COLLATE "C" NOT NULL,
    token       bigint NOT NULL,
    slot        text COLLATE "C" NOT NULL,
    owner       text NOT NULL,
    host        text NOT NULL,
    pid         bigint NOT NULL,
    period_ms   bigint NOT NULL,
    started_ms  bigint NOT NULL,
    -- the slot's anchor: when its opening firing fired (database clock, before waiting for
    -- the lock); every attempt of the slot (takeovers) carries it
    slot_fired_ms bigint NOT NULL,
    ended_ms    bigint,
    duration_ms bigint,
    exit_status integer,
    term_signal integer,
    outcome     text NOT NULL,
    message     text NOT NULL DEFAULT '',
    PRIMARY KEY (name, token)
);
CREATE INDEX IF NOT EXISTS {job_runs_slot_idx} ON {job_runs} (name, slot);
CREATE INDEX IF NOT EXISTS {job_runs_started_idx} ON {job_runs} (name, slot_fired_ms);
CREATE INDEX IF NOT EXISTS {job_runs_prune_idx} ON {job_runs} (started_ms);
