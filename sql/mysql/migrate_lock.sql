-- Named user lock held by this session: concurrent migrators wait here (up to 60 s).
SELECT GET_LOCK($1, 60)
