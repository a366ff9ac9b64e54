-- Which of two of sqlock's own locks are held: a semaphore's queue ("NAME<0x1f>permit queue": someone
-- waits for a permit) and a shared mutex's writer gate ("NAME<0x1f>writer": a writer holds or
-- waits). Asked where a permit's acquire statement cannot say whether it was held back for them
-- (lock_request::defer_to). $2 may equal $1; either may be NULL. A primary-key lookup; no lock.
SELECT name FROM {locks} WHERE name IN ($1::text, $2::text) AND owner <> ''
