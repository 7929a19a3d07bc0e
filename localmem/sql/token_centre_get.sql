SELECT dims, centre FROM token_centre WHERE embedder = :embedder;
