-- SQLite select_for_update locks are file locks of the holder process: nothing to end here.
SELECT 0 FROM {locks} WHERE 1 = 0 AND name = $1
