-- First writer wins: a centre, once recorded, is never replaced (its codes depend on it).
INSERT INTO token_centre (embedder, dims, centre, measured_at)
VALUES (:embedder, :dims, :centre, :measured_at)
ON CONFLICT (embedder) DO NOTHING;
