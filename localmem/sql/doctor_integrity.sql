PRAGMA integrity_check;
