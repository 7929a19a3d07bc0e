-- Near-duplicate candidates of a text about to be stored: the :k nearest memories
-- by cosine (vector_knn), with what the caller needs to keep the current ones
-- of the same context.
WITH {{vector_knn}}
SELECT m.id AS id, m.context AS context, m.archived AS archived, m.t_valid AS t_valid,
       m.t_invalid AS t_invalid, 1.0 - knn.distance AS similarity
FROM knn JOIN memories AS m ON m.pk = knn.pk
ORDER BY knn.distance;
