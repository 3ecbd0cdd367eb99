//! Times feature extraction on a synthetic series of 2 M samples (333,332
//! frames), without workers, files or hashing, whole and as the preparation
//! does it, through a `FrameBuilder` fed chunks of 32 Ki samples: the
//! median over 15 passes, in nanoseconds a frame (`cargo run --release -p stagebench-recipe
//! --example extract`).

use recipe::features::{FrameBuilder, extract};

fn main() {
    let n = 2_000_000usize;
    let mut r = evidence::rng::Rng::new(1);
    let ts: Vec<u32> = (0..n).map(|i| ((i * 5) % 86_400) as u32).collect();
    let e: Vec<f32> = (0..n).map(|_| r.uniform() as f32).collect();
    let a: Vec<f32> = (0..n).map(|_| (r.uniform() * 180.0 - 90.0) as f32).collect();
    let frames = recipe::contract::frame_count(n);
    let median = |f: &mut dyn FnMut() -> usize| {
        let mut times = Vec::new();
        let mut valid = 0;
        for _ in 0..15 {
            let t = std::time::Instant::now();
            valid = f();
            times.push(t.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        (times[7] / frames as f64 * 1e9, valid)
    };
    let (whole, valid) = median(&mut || extract(&ts, &e, &a).valid_frames());
    let (chunked, same) = median(&mut || {
        let mut b = FrameBuilder::default();
        for ((t, e), a) in ts.chunks(32 * 1024).zip(e.chunks(32 * 1024)).zip(a.chunks(32 * 1024)) {
            b.push(t, e, a);
        }
        b.finish().valid_frames()
    });
    assert_eq!(valid, same);
    println!(
        "median {whole:.2} ns a frame whole, {chunked:.2} chunked, over {frames} frames ({valid} valid)"
    );
}
