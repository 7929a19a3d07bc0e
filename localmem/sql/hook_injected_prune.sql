-- Ledger rows of sessions long over (a session reminded again after this long is no harm).
DELETE FROM hook_injected WHERE injected_at < :before;
