-- One edge by its key, to tell an update from a new edge (and say from what strength).
SELECT strength, properties FROM edges WHERE src = :src AND type = :type AND dst = :dst;
