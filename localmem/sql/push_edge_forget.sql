DELETE FROM push_edges WHERE remote = :remote AND src_id = :src_id AND type = :type AND dst_id = :dst_id;
