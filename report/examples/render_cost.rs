//! What report.html costs to draw, beside everything else a run derives:
//! `cargo run --release -p stagebench-report --example render_cost -- DIR [N]`.
//! Reads DIR/report.json, then N times (default 15) in turn: every derived
//! file (summary.md, each plot's SVG and PNG, report.html), and report.html
//! alone; prints each median, their ratio, and the page's size.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(dir) = args.get(1) else {
        eprintln!("usage: render_cost DIR [N]");
        std::process::exit(2);
    };
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(15);
    let text = std::fs::read(std::path::Path::new(dir).join("report.json")).expect("report.json");
    let r: report::modes::Report = serde_json::from_slice(&text).expect("a run's report");
    let (mut all, mut page) = (Vec::new(), Vec::new());
    let mut size = 0;
    for _ in 0..n {
        let t = Instant::now();
        let files = report::render::derived(&r).expect("derived");
        all.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let plots: Vec<(&str, &[u8])> = Vec::new();
        let html = report::render::html::page(&r, &plots).expect("page");
        page.push(t.elapsed().as_secs_f64());
        size = files.last().map_or(0, |f| f.bytes.len());
        assert!(html.len() <= size, "the page without plots is no larger");
    }
    let (a, p) = (report::stats::median(&all), report::stats::median(&page));
    println!(
        "{} mode: every derived file {:.2} ms, report.html alone (without the plots it inlines) {:.2} ms, ratio {:.3}; report.html {} bytes; median of {n}",
        r.mode(),
        a * 1e3,
        p * 1e3,
        p / a,
        size
    );
}
