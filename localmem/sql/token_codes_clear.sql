-- Every token code and centre: the file is being embedded again with another model.
DELETE FROM token_codes;
DELETE FROM token_centre;
