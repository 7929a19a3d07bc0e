-- A copy of a store (a backup, a restored store) takes a new identity, so that no peer takes
-- it for the store it was copied from (a store without one gets it from migration 0009).
UPDATE meta SET value = lower(hex(randomblob(16))) WHERE key = 'store_id';
-- The home the file recorded was the original's: the next writable open records its own
-- (storage/identity.py).
DELETE FROM meta WHERE key = 'store_home';
