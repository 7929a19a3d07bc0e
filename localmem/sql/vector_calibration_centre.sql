-- The calibration's middle thresholds (the store's mean vector, padded), when measured.
SELECT mid, calibrated_at, sample_rows FROM vector_calibration WHERE id = 1;
