//! Which threads do the model's arithmetic. The convolutions (most of a
//! training step) run on rayon's pool, one thread per core. candle has a
//! second pool of its own for element-wise ops, whose idle workers spin:
//! on a two-core machine the two pools fight over the cores. Unless the
//! user chose otherwise, candle's element-wise ops stay on the calling
//! thread (measured on two cores: 10.9 ms a step with both pools, 8.0 ms
//! with candle's kept to one thread).

/// candle's thread setting, read once when its pool first starts.
pub const CANDLE_THREADS: &str = "CANDLE_NUM_THREADS";

/// Sets candle's pool to the calling thread unless `CANDLE_NUM_THREADS` is
/// set. Call first thing in `main`, before any other thread exists.
pub fn settle() {
    if std::env::var_os(CANDLE_THREADS).is_none() {
        // SAFETY: called at the top of main, while the process has one thread,
        // so nothing can read the environment concurrently.
        unsafe { std::env::set_var(CANDLE_THREADS, "1") };
    }
}
