-- One bounded batch, walking the expires_at index; the row condition is re-checked under the
-- row lock, so a lease renewed meanwhile survives.
DELETE FROM {locks} WHERE expires_at < UTC_TIMESTAMP(6) ORDER BY expires_at LIMIT $1
