-- sqlock schema v6 (MariaDB): scheduled jobs (sqlock run --once-per, sqlock::job).
-- Times are integer milliseconds since 1970 UTC on the database clock (the same in every
-- backend, so the slot rule's arithmetic is the same code everywhere).
-- {jobs}: one row per job name: what status, Prometheus and "sqlock check" read. Counters only
-- grow (Prometheus counters); skipped firings are counted here, never stored one by one.
CREATE TABLE IF NOT EXISTS {jobs} (
    name                    VARBINARY(255) NOT NULL PRIMARY KEY,
    period_ms               BIGINT NOT NULL DEFAULT 0,
    first_fired_ms          BIGINT NOT NULL,
    last_fired_ms           BIGINT NOT NULL,
    last_outcome            VARCHAR(16) NOT NULL DEFAULT '',
    last_started_ms         BIGINT NOT NULL DEFAULT 0,
    last_duration_ms        BIGINT NOT NULL DEFAULT 0,
    last_success_started_ms BIGINT NOT NULL DEFAULT 0,
    last_success_ended_ms   BIGINT NOT NULL DEFAULT 0,
    succeeded               BIGINT NOT NULL DEFAULT 0,
    failed                  BIGINT NOT NULL DEFAULT 0,
    lost                    BIGINT NOT NULL DEFAULT 0,
    abandoned               BIGINT NOT NULL DEFAULT 0,
    skipped                 BIGINT NOT NULL DEFAULT 0
) ENGINE = InnoDB;
-- {job_runs}: the ledger, one row per attempt. The fencing token of the attempt's grant is
-- unique per name, so (name, token) identifies an attempt. outcome: running, succeeded, failed,
-- lost, abandoned. ended_ms/duration_ms are NULL while running; exit_status/term_signal are NULL
-- when there is none (term_signal: the command was killed by that signal).
CREATE TABLE IF NOT EXISTS {job_runs} (
    name        VARBINARY(255) NOT NULL,
    token       BIGINT NOT NULL,
    slot        VARBINARY(255) NOT NULL,
    owner       VARBINARY(255) NOT NULL,
    host        VARCHAR(255) NOT NULL,
    pid         BIGINT NOT NULL,
    period_ms   BIGINT NOT NULL,
    started_ms  BIGINT NOT NULL,
    -- the slot's anchor: when its opening firing fired (database clock, before waiting for
    -- the lock); every attempt of the slot (takeovers) carries it
    slot_fired_ms BIGINT NOT NULL,
    ended_ms    BIGINT NULL,
    duration_ms BIGINT NULL,
    exit_status INT NULL,
    term_signal INT NULL,
    outcome     VARCHAR(16) NOT NULL,
    message     VARCHAR(1024) NOT NULL DEFAULT '',
    PRIMARY KEY (name, token),
    KEY {job_runs_slot_idx} (name, slot),
    KEY {job_runs_started_idx} (name, slot_fired_ms),
    KEY {job_runs_prune_idx} (started_ms)
) ENGINE = InnoDB;
