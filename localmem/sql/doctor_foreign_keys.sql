PRAGMA foreign_key_check;
