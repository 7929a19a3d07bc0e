INSERT INTO vector_calibration (id, generation, dims, low, mid, high, depth_1bit, depth_3bit,
                                sample_recall, sample_rows, checked_rows, calibrated_at)
VALUES (1, :generation, :dims, :low, :mid, :high, :depth_1bit, :depth_3bit, :sample_recall,
        :sample_rows, :checked_rows, :calibrated_at)
ON CONFLICT (id) DO UPDATE SET
    generation = excluded.generation, dims = excluded.dims, low = excluded.low, mid = excluded.mid,
    high = excluded.high, depth_1bit = excluded.depth_1bit, depth_3bit = excluded.depth_3bit,
    sample_recall = excluded.sample_recall, sample_rows = excluded.sample_rows,
    checked_rows = excluded.checked_rows, calibrated_at = excluded.calibrated_at;
