SELECT id, purged_at FROM forget_purges WHERE purged_at >= :since ORDER BY purged_at, id LIMIT :limit;
