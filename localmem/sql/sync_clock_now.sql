SELECT seq FROM sync_clock WHERE id = 1;
