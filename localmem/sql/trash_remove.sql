DELETE FROM trash WHERE id = :id;
