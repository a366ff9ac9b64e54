-- A step of this server's clock that a sqlock process noticed (base/clock_watch.hpp), for
-- `sqlock status`. $1 observer (host:pid), $2 the step in ms (+ forward, - back).
INSERT INTO {clock_steps} (observer, step_ms) VALUES ($1, $2)
