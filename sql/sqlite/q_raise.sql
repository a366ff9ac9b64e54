-- quorum, re-seeding a member restored from a backup (quorum_reseed): raises this member's mark
-- for name $1 to token $2, the highest any other member accepted, and frees the row (a holder it
-- remembers is older than that mark). Never lowers a mark. Affected rows: 1 when raised.
UPDATE {quorum}
SET token = $2, owner = '', host = '', pid = 0, version = version + 1, expires_at = NULL
WHERE name = $1 AND token < $2
