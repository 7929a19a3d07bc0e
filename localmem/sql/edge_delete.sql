-- Remove the edges src -> dst: of one type, or of every type when :type is NULL.
DELETE FROM edges
WHERE src = :src AND dst = :dst AND (:type IS NULL OR type = :type)
RETURNING type;
