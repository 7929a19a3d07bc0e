-- The ids just before and after :id in id order (two index probes), to find
-- the shortest prefix of :id that no other id shares.
SELECT (SELECT id FROM memories WHERE id < :id ORDER BY id DESC LIMIT 1) AS before,
       (SELECT id FROM memories WHERE id > :id ORDER BY id ASC LIMIT 1) AS after;
