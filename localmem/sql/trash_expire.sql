-- Entries past the keeping time, or all of them with a cutoff in the future.
DELETE FROM trash WHERE trashed_at < :cutoff;
