-- After fu_lock found this server incarnation unrecovered (the MEMORY marker is empty after a
-- restart): move the sequence past the durable high-water mark and mark it recovered.
CALL {recover_tokens}()
