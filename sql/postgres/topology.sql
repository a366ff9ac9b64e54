-- What the server behind a new connection is (DESIGN §9), one row:
--   read_only      1 on a hot standby (or with default_transaction_read_only): refused
--   replicas       standbys streaming from this server (rows are visible to every role)
--   synchronous    1 when a commit waits for a standby: synchronous_standby_names is set and
--                  this session's synchronous_commit waits for it (on, remote_write,
--                  remote_apply); then a promoted standby has every acknowledged grant
--   cluster_nodes  1: PostgreSQL has no multi-writer clusters
--   server         host:port as the server sees it (NULL over a Unix socket)
SELECT CAST(pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on' AS INTEGER)
           AS read_only,
       (SELECT count(*) FROM pg_stat_replication) AS replicas,
       CAST(current_setting('synchronous_standby_names') <> ''
            AND current_setting('synchronous_commit') IN ('on', 'remote_write', 'remote_apply')
            AS INTEGER) AS synchronous,
       1 AS cluster_nodes,
       host(inet_server_addr()) || ':' || inet_server_port() AS server
