-- Before a release: its commit skips the fsync (WAL mode with synchronous = NORMAL writes the
-- WAL but does not sync it). A release lost in a power failure or OS crash only leaves the
-- lease to expire at its TTL; an application crash loses nothing (the WAL is written). The
-- next durable commit on the file syncs the WAL, this release included. Grants stay durable:
-- async_commit puts synchronous = FULL back right after the release, and a session whose
-- release failed half-way is closed, never pooled.
PRAGMA synchronous = NORMAL
