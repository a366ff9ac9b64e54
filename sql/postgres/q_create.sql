-- quorum: a free row for a name, token 0, when there is none yet (never fails on a race).
INSERT INTO {quorum} (name) VALUES ($1::text) ON CONFLICT (name) DO NOTHING
