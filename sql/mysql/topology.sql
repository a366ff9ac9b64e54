-- What the server behind a new connection is (DESIGN §9), one row:
--   read_only      1 on a replica (read_only is set there by convention): refused
--   replicas       replicas connected to this server (status Slaves_connected)
--   synchronous    1 when a commit waits for a replica: semi-synchronous replication active
--                  with the lossless wait point AFTER_SYNC (AFTER_COMMIT acknowledges first)
--   cluster_nodes  Galera: wsrep_cluster_size while wsrep is on; 1 otherwise
--   server         @@hostname:@@port
--   node_ready     Galera only (NULL otherwise): 1 while the node serves clients (wsrep_ready
--                  ON, in the primary component); 0 and every lock statement fails with 1047
--   node_state     Galera only: wsrep_local_state_comment and wsrep_cluster_status, for errors
-- information_schema.GLOBAL_STATUS needs no privilege; unknown variables give no row.
SELECT CAST(@@global.read_only AS SIGNED) AS read_only,
       CAST(COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                      WHERE VARIABLE_NAME = 'SLAVES_CONNECTED'), '0') AS SIGNED) AS replicas,
       CAST(COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                      WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_STATUS'), 'OFF') = 'ON'
            AND @@global.rpl_semi_sync_master_wait_point = 'AFTER_SYNC' AS SIGNED) AS synchronous,
       CASE WHEN @@global.wsrep_on = 1
            THEN CAST(COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                                WHERE VARIABLE_NAME = 'WSREP_CLUSTER_SIZE'), '1') AS SIGNED)
            ELSE 1 END AS cluster_nodes,
       CONCAT(@@hostname, ':', @@port) AS server,
       CASE WHEN @@global.wsrep_on = 1
            THEN CAST(COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                                WHERE VARIABLE_NAME = 'WSREP_READY'), 'OFF') = 'ON'
                      AND COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                                    WHERE VARIABLE_NAME = 'WSREP_CLUSTER_STATUS'), '') = 'Primary'
                      AS SIGNED) END AS node_ready,
       CASE WHEN @@global.wsrep_on = 1
            THEN CONCAT(COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                                  WHERE VARIABLE_NAME = 'WSREP_LOCAL_STATE_COMMENT'), '?'), ', ',
                        COALESCE((SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS
                                  WHERE VARIABLE_NAME = 'WSREP_CLUSTER_STATUS'), '?'))
            END AS node_state
