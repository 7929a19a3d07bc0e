-- Schema version 18: edges a sync owes a memory it brought back (issue 42, item 3).
--
-- A memory kept over its delete (an edit the deleter had not seen) is written back where it was
-- deleted, and then its edges are copied there from the store that kept it: two writes. A sync
-- killed between them left the memory back without its edges, and the next sync, finding the
-- same version on both stores, had nothing to merge, while the deletion's logged edge removals
-- travelled and removed the edges from the keeper too. The sync running the merge notes here,
-- before writing the memory back, which store owes which the edges of which memory; the note is
-- cleared once the edges are written, and a note left by a killed sync is settled at the start
-- of the next sync of the same two stores.
CREATE TABLE IF NOT EXISTS sync_owed_edges (
    keeper TEXT NOT NULL,    -- the store identity that kept the memory (and holds its edges)
    receiver TEXT NOT NULL,  -- the store identity the memory was brought back to
    id TEXT NOT NULL,        -- the memory
    PRIMARY KEY (keeper, receiver, id)
) WITHOUT ROWID;
