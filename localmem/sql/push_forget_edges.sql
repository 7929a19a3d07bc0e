-- Edges of a memory the server deleted with it.
DELETE FROM push_edges WHERE remote = :remote AND (src_id = :local_id OR dst_id = :local_id);
