-- Browse: one page of the memories that pass the filters in use (the
-- list_filter slot, from the list_* and scope_tags_* fragments), in the
-- order chosen (the list_order slot: a fixed ORDER BY per sort name, id last).
SELECT m.* FROM memories AS m
WHERE {{list_filter}}
ORDER BY {{list_order}}
LIMIT :limit OFFSET :offset;
