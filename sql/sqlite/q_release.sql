-- quorum: gives our row on this member back (owner and token checked). The row and its token
-- stay: the token is this member's high-water mark for the name.
UPDATE {quorum}
SET owner = '', host = '', pid = 0, version = version + 1, expires_at = NULL
WHERE name = $1 AND owner = $2 AND token = $3
