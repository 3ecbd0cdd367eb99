//! The versioned feature contract (docs/feature-contract.md). Any change to a
//! number here, or to how features are computed, bumps [`VERSION`].

/// Version of the feature contract; recorded in frozen.json, caches and reports.
pub const VERSION: &str = "stagebench-features/1";
/// Seconds between consecutive samples (UTC).
pub const SAMPLE_SECONDS: i64 = 5;
/// Samples per frame.
pub const FRAME_SAMPLES: usize = 12;
/// Samples between the starts of consecutive frames.
pub const FRAME_STRIDE: usize = 6;
/// Feature names, in storage order.
pub const FEATURES: [&str; 5] = ["tod", "mov_mu", "mov_std", "angle_mu", "angle_std"];
/// Number of features per frame.
pub const N_FEATURES: usize = FEATURES.len();
/// Fraction of series (by SHA-256 order of their id) in the training partition.
pub const TRAIN_FRACTION: f64 = 0.70;
/// Fraction in the validation partition; the rest is test.
pub const VALIDATION_FRACTION: f64 = 0.15;

/// Frames of a series of `samples` samples: max(0, (N − 12) div 6 + 1).
pub fn frame_count(samples: usize) -> usize {
    if samples < FRAME_SAMPLES { 0 } else { (samples - FRAME_SAMPLES) / FRAME_STRIDE + 1 }
}

/// The contract's constants as JSON, for frozen.json and reports.
pub fn describe() -> serde_json::Value {
    serde_json::json!({
        "version": VERSION,
        "sample_seconds": SAMPLE_SECONDS,
        "frame_samples": FRAME_SAMPLES,
        "frame_stride": FRAME_STRIDE,
        "features": FEATURES,
        "train_fraction": TRAIN_FRACTION,
        "validation_fraction": VALIDATION_FRACTION,
    })
}

#[cfg(test)]
mod tests {
    use super::frame_count;

    #[test]
    fn frame_counts_drop_incomplete_tails() {
        assert_eq!(frame_count(0), 0);
        assert_eq!(frame_count(11), 0);
        assert_eq!(frame_count(12), 1);
        assert_eq!(frame_count(17), 1);
        assert_eq!(frame_count(18), 2);
        assert_eq!(frame_count(17_280), 2879);
    }
}
