-- Schema version 12: exact-duplicate keys (storage/dedup_keys.py, docs/dedup.md).
-- One row per memory: 16 bytes of the SHA-256 of its normalised content and scope. The
-- index is not unique on purpose: copies stored before this version, and
-- superseded, archived or expired copies, keep their keys; a write finds the
-- current one under its write lock (BEGIN IMMEDIATE), so two writers cannot
-- both miss it.
CREATE TABLE memory_dedup_keys (
    pk  INTEGER PRIMARY KEY REFERENCES memories (pk) ON DELETE CASCADE,
    key BLOB NOT NULL
);
CREATE INDEX memory_dedup_keys_key ON memory_dedup_keys (key, pk);
