-- Browse fragment: created before :until.
m.timestamp < :until
