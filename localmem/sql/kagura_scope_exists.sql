-- Whether any memory passes the scope (used to tell "the tag filter matched nothing").
SELECT EXISTS (SELECT 1 FROM memories AS m WHERE {{kagura_scope_filter}});
