UPDATE vector_calibration SET checked_rows = :checked_rows WHERE id = 1;
