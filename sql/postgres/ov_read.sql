-- optimistic_version, step 1: the row's version (token), holder and whether its lease is live.
SELECT token, owner, hold_count, CAST(owner <> '' AND expires_at > statement_timestamp() AS integer)
FROM {locks} WHERE name = $1::text
