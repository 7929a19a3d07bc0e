-- Echo notes at or below the mark sent to :peer are never read again.
DELETE FROM sync_echo WHERE peer = :peer AND seq <= :sent_seq;
