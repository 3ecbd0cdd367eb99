//! Times training steps on one seeded batch of 32 contexts: a quick look at
//! the model's step cost without the coordinator, with the worker's
//! allocator settings (`cargo run --release -p stagebench-worker --example
//! steps [STEPS]`).

use model::net::{HostBatch, Model};

use evidence::rng::Rng;
use recipe::loader::Batch;

fn main() {
    worker::alloc::configure();
    worker::threads::settle();
    let steps: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let frames = recipe::targets::CONTEXT_FRAMES;
    let mut r = Rng::new(7);
    let len = recipe::loader::BATCH;
    let x = ndarray::Array3::from_shape_simple_fn((len, frames, 5), || r.uniform() as f32 - 0.5);
    let y = ndarray::Array2::from_shape_fn((len, frames), |(b, f)| {
        i32::from((b * frames + f) % 300 < 120)
    });
    let batch = HostBatch::from_loader(&Batch { x, y }).expect("a batch");
    let mut m = Model::new(0).expect("a model");
    for _ in 0..2 {
        m.step(&batch).expect("a step");
    }
    let mut times = Vec::new();
    for _ in 0..steps {
        let t = std::time::Instant::now();
        m.step(&batch).expect("a step");
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!("median step {:.3} ms over {steps}", times[steps / 2] * 1e3);
}
