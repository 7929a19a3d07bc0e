-- The edges :remote has, by local ids, as last sent or taken.
SELECT src_id, type, dst_id, strength, properties FROM push_edges WHERE remote = :remote;
