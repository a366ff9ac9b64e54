-- Break-glass release by an operator (inside a transaction, after inspect_lock): the lease
-- becomes free and its token moves forward, so the old holder's renewals, releases and fenced
-- writes all fail from now on. The token always changes, so the affected-row count is exact.
-- Only a held row (an expired holder's too): a free row is left alone, its token unchanged
-- (nothing to fence off), and 0 affected rows tell the caller there was nothing to release.
UPDATE {locks}
SET owner = '', hold_count = 1, token = NEXTVAL({token_seq}),
    expires_at = LEAST(expires_at, UTC_TIMESTAMP(6))
WHERE name = $1 AND strategy <> 'select_for_update' AND owner <> ''
