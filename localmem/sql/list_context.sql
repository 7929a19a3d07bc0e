-- Browse fragment: in the context (namespace) :context.
m.context = :context
