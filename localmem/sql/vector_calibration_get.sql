SELECT generation, dims, low, mid, high, depth_1bit, depth_3bit, sample_recall, sample_rows,
       checked_rows, calibrated_at
FROM vector_calibration WHERE id = 1;
