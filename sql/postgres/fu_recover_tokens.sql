-- After fu_lock found this server incarnation unrecovered (a crash emptied the unlogged
-- marker): move the sequence past the durable high-water mark and mark it recovered.
SELECT {recover_tokens}()
