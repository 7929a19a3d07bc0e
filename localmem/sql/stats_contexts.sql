SELECT context, count(*) AS count FROM memories GROUP BY context ORDER BY count DESC, context;
