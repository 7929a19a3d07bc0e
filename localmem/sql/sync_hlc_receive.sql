-- The max rule: a stamp received from a peer moves this store's clock past it, unless its wall
-- time is more than :skew_ms ahead of this machine's (such a clock must not drag this one).
UPDATE sync_clock SET hlc_wall = :wall, hlc_counter = :counter
WHERE id = 1 AND (:wall > hlc_wall OR (:wall = hlc_wall AND :counter > hlc_counter))
  AND :wall <= localmem_wall_ms() + :skew_ms;
