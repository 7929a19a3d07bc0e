-- Scope fragment: the time window (both bounds inclusive; a range on the timestamp index).
m.timestamp >= coalesce(:window_start, '') AND m.timestamp <= coalesce(:window_end, '9999')
