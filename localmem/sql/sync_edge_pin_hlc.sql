-- An edge a sync copies keeps the stamp it was written with on the other store.
UPDATE sync_edge_log SET hlc = :hlc WHERE src_id = :src_id AND type = :type AND dst_id = :dst_id;
