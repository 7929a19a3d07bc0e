-- Register a server pulled from in push's map (its ids are kept there), leaving
-- what a push recorded of it as it is.
INSERT INTO push_remotes (remote, kind, first_push, last_push)
VALUES (:remote, 'automem', :now, NULL)
ON CONFLICT (remote) DO NOTHING;
