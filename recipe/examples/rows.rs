//! Times the row contract check (`RowChecker::push_raw`: step sequence,
//! timestamp parse, 5 s cadence) on 2 M synthetic rows laid out as a parquet
//! string column's bytes and offsets, across a daylight-saving change and
//! several midnights, in batches of 32 Ki rows as the reader decodes them
//! (each copied just before, so it is in cache as a decoded batch would be,
//! and the copy not timed): the median over 15 passes, in nanoseconds a row
//! (`cargo run --release -p stagebench-recipe --example rows`).

use recipe::clock;
use recipe::rows::RowChecker;

fn main() {
    let n = 2_000_000usize;
    let start = 1_541_000_000i64; // 2018-10-31, so the rows cross 2018-11-04's change
    let steps: Vec<u32> = (0..n as u32).collect();
    let mut offsets = vec![0i32];
    let mut data = Vec::with_capacity(n * 24);
    for i in 0..n {
        let utc = start + 5 * i as i64;
        let mut b = [0u8; 24];
        clock::format_into(utc, clock::eastern_offset(utc), &mut b);
        data.extend_from_slice(&b);
        offsets.push(data.len() as i32);
    }
    let mut times = Vec::new();
    let mut out = Vec::with_capacity(n);
    const BATCH: usize = 32 * 1024;
    let (mut o, mut d) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        out.clear();
        let mut checker = RowChecker::default();
        let mut spent = std::time::Duration::ZERO;
        for start in (0..n).step_by(BATCH) {
            let end = (start + BATCH).min(n);
            let base = offsets[start];
            o.clear();
            o.extend(offsets[start..=end].iter().map(|x| x - base));
            d.clear();
            d.extend_from_slice(&data[base as usize..offsets[end] as usize]);
            let t = std::time::Instant::now();
            checker.push_raw(&steps[start..end], &o, &d, &mut out).expect("clean rows");
            spent += t.elapsed();
        }
        times.push(spent.as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    let sum: u64 = out.iter().map(|&s| s as u64).sum();
    println!(
        "median {:.2} ns a row over {n} rows (sum of local seconds {sum})",
        times[7] / n as f64 * 1e9
    );
}
