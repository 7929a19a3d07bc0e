SELECT t.id, t.deleted_at, t.purged, t.deleted_updated_at, t.hlc, t.deleted_hlc,
       (SELECT json_group_array(json_array(v.replica, v.hlc)) FROM (SELECT replica, hlc FROM sync_seen AS s
        WHERE s.id = t.id ORDER BY replica = 'floor' DESC, hlc DESC LIMIT 17) AS v) AS seen
FROM sync_tombstones AS t WHERE t.id IN (SELECT value FROM json_each(:ids));
