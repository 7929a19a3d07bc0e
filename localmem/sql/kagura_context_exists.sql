-- Whether a context holds any memory (an empty or unknown context is "not found").
SELECT EXISTS (SELECT 1 FROM memories WHERE context = :context);
