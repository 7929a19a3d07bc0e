-- Browse fragment: created at or after :since (a range on the timestamp index).
m.timestamp >= :since
