-- Codes written after clock value :seq (all of them for :seq = -1), in pk order.
SELECT pk, ts, codes FROM vector_codes WHERE seq > :seq ORDER BY pk;
