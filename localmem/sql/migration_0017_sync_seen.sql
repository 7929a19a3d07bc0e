-- Schema version 17: what a store has seen of each memory (issue 42: an edit made without
-- seeing a delete survives it, whatever the clocks say).
--
-- sync_seen holds, per memory id and per replica (the store identity that ends a stamp), the
-- latest stamp of a version of that memory this store held and replaced, or took in through a
-- sync's merge. A replica's stamps for one memory are made in order, so the latest one covers
-- every earlier one: a version stamped by replica R is "seen" here when its stamp is at most
-- the row for R. Keyed by the memory's id (not its row), the rows outlive a delete: a
-- tombstone carries what its deleter had seen, and a memory a merge brings back keeps it.
--
-- Bounded: at most 16 replicas per memory. Past that, the oldest entries fold into one row
-- with replica 'floor', which covers every stamp up to it from any replica (so an edit from a
-- folded replica counts as seen by a delete: it goes to the trash, restorable, rather than
-- bringing the memory back).
CREATE TABLE IF NOT EXISTS sync_seen (
    id TEXT NOT NULL,
    replica TEXT NOT NULL,
    hlc TEXT NOT NULL,
    PRIMARY KEY (id, replica)
) WITHOUT ROWID;

-- A version replaced (the same fields as memory_changes_update watches) or deleted: its stamp
-- is seen. BEFORE, so memory_changes still holds the stamp of the version being replaced.
DROP TRIGGER IF EXISTS sync_seen_on_update;
CREATE TRIGGER sync_seen_on_update BEFORE UPDATE ON memories
WHEN new.content IS NOT old.content OR new.summary IS NOT old.summary
  OR new.type IS NOT old.type OR new.confidence IS NOT old.confidence
  OR new.importance IS NOT old.importance OR new.tags IS NOT old.tags
  OR new.timestamp IS NOT old.timestamp OR new.updated_at IS NOT old.updated_at
  OR new.t_valid IS NOT old.t_valid OR new.t_invalid IS NOT old.t_invalid
  OR new.archived IS NOT old.archived OR new.metadata IS NOT old.metadata
  OR new.context IS NOT old.context OR new.relevance_score IS NOT old.relevance_score
BEGIN
    INSERT INTO sync_seen (id, replica, hlc)
    SELECT old.id, substr(c.hlc, 28), c.hlc FROM memory_changes AS c WHERE c.pk = old.pk AND c.hlc IS NOT NULL
    ON CONFLICT (id, replica) DO UPDATE SET hlc = max(hlc, excluded.hlc);
END;

DROP TRIGGER IF EXISTS sync_seen_on_delete;
CREATE TRIGGER sync_seen_on_delete BEFORE DELETE ON memories
BEGIN
    INSERT INTO sync_seen (id, replica, hlc)
    SELECT old.id, substr(c.hlc, 28), c.hlc FROM memory_changes AS c WHERE c.pk = old.pk AND c.hlc IS NOT NULL
    ON CONFLICT (id, replica) DO UPDATE SET hlc = max(hlc, excluded.hlc);
END;

-- The bound, kept wherever a row comes from (the triggers above, a sync's join): a memory's
-- entry for a new replica past the 16th folds the oldest into the floor.
DROP TRIGGER IF EXISTS sync_seen_bound;
CREATE TRIGGER sync_seen_bound AFTER INSERT ON sync_seen WHEN new.replica <> 'floor'
BEGIN
    INSERT INTO sync_seen (id, replica, hlc)
    SELECT new.id, 'floor', f.hlc
    FROM (SELECT max(hlc) AS hlc FROM (SELECT hlc FROM sync_seen WHERE id = new.id AND replica <> 'floor'
                                       ORDER BY hlc DESC LIMIT -1 OFFSET 16)) AS f
    WHERE f.hlc IS NOT NULL
    ON CONFLICT (id, replica) DO UPDATE SET hlc = max(hlc, excluded.hlc);
    DELETE FROM sync_seen WHERE id = new.id AND replica <> 'floor'
        AND hlc <= (SELECT hlc FROM sync_seen WHERE id = new.id AND replica = 'floor');
END;

-- Stamps a sync will pin on records it writes in a batch (the batch write embeds its records and
-- commits on its own): noted before the batch, pinned and cleared after it in one transaction.
-- A process killed between the two leaves them here; the next sync pins those whose record is
-- still the version written (StoreSide.settle_pins), so a crash cannot reorder them.
CREATE TABLE IF NOT EXISTS sync_pending_pins (
    batch INTEGER PRIMARY KEY,
    peer TEXT NOT NULL,
    pins TEXT NOT NULL  -- a JSON list of [id, stamp, updated_at], one per record of the batch
);

-- A token per pair of stores, drawn afresh at the end of each sync and written to both: two
-- stores that last synced hold the same one. A store rolled back in place (a file-system or disk
-- snapshot: the same file, identity and home, older contents) holds an older one, and so does
-- a copy: the next sync between the two then compares everything instead of trusting the sent
-- marks, which count changes the rolled-back store no longer holds.
CREATE TABLE IF NOT EXISTS sync_pair_tokens (
    peer TEXT PRIMARY KEY,
    token TEXT NOT NULL
) WITHOUT ROWID;
