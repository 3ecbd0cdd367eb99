//! Times feature extraction on a synthetic series of 2 M samples (333,332
//! frames), without workers, files or hashing: the median over 15 passes,
//! in nanoseconds a frame (`cargo run --release -p stagebench-recipe
//! --example extract`).

use recipe::features::extract;

fn main() {
    let n = 2_000_000usize;
    let mut r = recipe::rng::Rng::new(1);
    let ts: Vec<u32> = (0..n).map(|i| ((i * 5) % 86_400) as u32).collect();
    let e: Vec<f32> = (0..n).map(|_| r.uniform() as f32).collect();
    let a: Vec<f32> = (0..n).map(|_| (r.uniform() * 180.0 - 90.0) as f32).collect();
    let frames = recipe::contract::frame_count(n);
    let mut times = Vec::new();
    let mut valid = 0;
    for _ in 0..15 {
        let t = std::time::Instant::now();
        let f = extract(&ts, &e, &a);
        times.push(t.elapsed().as_secs_f64());
        valid = f.valid_frames();
    }
    times.sort_by(f64::total_cmp);
    println!(
        "median {:.2} ns a frame over {frames} frames ({valid} valid)",
        times[7] / frames as f64 * 1e9
    );
}
