-- Before a merge writes back memories kept over their delete: :receiver owes itself the edges
-- :keeper holds of each memory in :ids (a JSON list), until they are written.
INSERT OR IGNORE INTO sync_owed_edges (keeper, receiver, id)
SELECT :keeper, :receiver, value FROM json_each(:ids);
