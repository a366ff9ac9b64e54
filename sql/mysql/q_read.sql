-- quorum, round 1: this member's row for a name (none before the name's first use here): the
-- highest token it accepted, its holder ('' free), the version a waiter watches, the holder's TTL.
SELECT token, owner, version, ttl_ms FROM {quorum} WHERE name = $1
