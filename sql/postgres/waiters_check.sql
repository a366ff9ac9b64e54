-- Which of two of sqlock's own locks are held: a semaphore's queue ("NAME<0x1f>queue": someone
-- waits for a permit) and a shared mutex's writer gate ("NAME<0x1f>writer": a writer holds or
-- waits). A caller that can wait reads this before taking a permit, so that it never takes one
-- past a waiter. $2 may equal $1. A primary-key lookup; no lock taken.
SELECT name FROM {locks} WHERE name IN ($1::text, $2::text) AND owner <> ''
