SELECT m.* FROM memories AS m WHERE m.id = :id;
