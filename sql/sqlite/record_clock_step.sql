-- A step of this machine's wall clock that a sqlock process noticed (base/clock_watch.hpp), for
-- `sqlock status`. $1 observer (host:pid), $2 the step in ms (+ forward, - back).
INSERT INTO {clock_steps} (seen_at, observer, step_ms)
VALUES (CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER), $1, $2)
