UPDATE memories SET thread = :thread WHERE pk = :pk;
