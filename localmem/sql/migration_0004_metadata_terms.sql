-- Schema version 4: an index of the value tokens of whitelisted metadata
-- fields, so the metadata sidecar finds candidates by lookups, not scans.
CREATE TABLE memory_metadata_terms (
    term TEXT NOT NULL,
    pk   INTEGER NOT NULL REFERENCES memories (pk) ON DELETE CASCADE,
    PRIMARY KEY (term, pk)
) WITHOUT ROWID;
CREATE INDEX memory_metadata_terms_pk ON memory_metadata_terms (pk);
