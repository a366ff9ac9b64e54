-- After a release (see async_commit_off): every other commit on this connection is durable.
PRAGMA synchronous = FULL
