//! A span's per-call durations as a histogram on a log axis: the helper's
//! buckets (64 a power of two) pooled four a power of two, with the first
//! call, median, p95, p99 and max marked. An inline `<svg>`.

use crate::fmt::duration;
use crate::rundir::spans::SpanRecord;
use maud::{Markup, html};

const W: f64 = 560.0;
const H: f64 = 120.0;
/// Plot area: left, right, top, bottom.
const PLOT: (f64, f64, f64, f64) = (8.0, 552.0, 22.0, 96.0);
/// Bins a power of two.
const PER_OCTAVE: f64 = 4.0;

/// The histogram of `x`'s calls, or None when the report kept no buckets.
pub fn svg(x: &SpanRecord) -> Option<Markup> {
    let points: Vec<(f64, u64)> = x
        .buckets
        .iter()
        .filter_map(|&(k, n)| Some((protocol::spans::bucket_middle(k)?.max(1.0).log2(), n)))
        .collect();
    let lo = (points.iter().map(|p| p.0).fold(f64::INFINITY, f64::min) * PER_OCTAVE).floor();
    let hi = (points.iter().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max) * PER_OCTAVE).floor();
    if !lo.is_finite() || !hi.is_finite() {
        return None;
    }
    let bins = (hi - lo) as usize + 1;
    let mut counts = vec![0u64; bins];
    for (l, n) in &points {
        counts[((l * PER_OCTAVE).floor() - lo) as usize] += n;
    }
    let top = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
    let (left, right, y0, y1) = PLOT;
    let width = (right - left) / bins as f64;
    // Seconds to x: the log axis the bins are on.
    let x_of = |s: f64| {
        let b = (s * 1e9).max(1.0).log2() * PER_OCTAVE - lo;
        left + (b / bins as f64).clamp(0.0, 1.0) * (right - left)
    };
    let marks = [
        ("first", x.first_s),
        ("median", x.median_s),
        ("p95", x.p95_s),
        ("p99", x.p99_s),
        ("max", x.max_s),
    ];
    // The bars as one path (a page of 30 spans stays small).
    let mut bars = String::new();
    for (i, &c) in counts.iter().enumerate().filter(|(_, c)| **c > 0) {
        let h = (y1 - y0) * c as f64 / top;
        bars += &format!(
            "M{} {}h{}v{}h-{}z",
            r1(left + i as f64 * width),
            r1(y1),
            r1(width.max(1.0)),
            -r1(h),
            r1(width.max(1.0))
        );
    }
    let total: u64 = counts.iter().sum();
    Some(html! {
        svg.histogram viewBox=(format!("0 0 {W} {H}")) width=(W) height=(H) role="img" {
            title { (total) " calls on a log axis, " (PER_OCTAVE) " bins a power of two; tallest bin " (top) " calls" }
            path.bars d=(bars) data-bins=(counts.iter().filter(|c| **c > 0).count()) {}
            line.axis x1=(left) y1=(y1) x2=(right) y2=(y1) {}
            @for (k, (name, s)) in marks.iter().enumerate() {
                @let at = r1(x_of(*s));
                line.mark x1=(at) y1=(y0 - 4.0) x2=(at) y2=(y1) {}
                text.mark x=(at) y=(10.0 + 9.0 * (k % 2) as f64) { (name) }
            }
            text x=(left) y=(H - 6.0) { (duration(2f64.powf(lo / PER_OCTAVE) / 1e9)) }
            text.end x=(right) y=(H - 6.0) { (duration(2f64.powf((hi + 1.0) / PER_OCTAVE) / 1e9)) }
        }
    })
}

/// One decimal: coordinates need no more.
fn r1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_land_in_bins_by_their_duration_and_every_quantile_is_marked() {
        let mut s = protocol::SpanSummary::new("f");
        for _ in 0..90 {
            s.add_call(1e-3, 0.0);
        }
        for _ in 0..10 {
            s.add_call(8e-3, 0.0);
        }
        let (recs, _) = crate::rundir::spans::records([(1.0, &[s][..])]).unwrap();
        let svg = svg(&recs["f"]).unwrap().into_string();
        // Two bars, 90 and 10 calls: three octaves apart, the second a ninth as tall.
        assert!(svg.contains("data-bins=\"2\""), "{svg}");
        assert!(svg.contains("100 calls") && svg.contains("tallest bin 90 calls"), "{svg}");
        assert_eq!(svg.matches('z').count(), 2, "{svg}");
        for m in ["first", "median", "p95", "p99", "max"] {
            assert!(svg.contains(&format!(">{m}</text>")), "{m}");
        }
        let mut none = recs["f"].clone();
        none.buckets.clear();
        assert!(super::svg(&none).is_none());
    }
}
