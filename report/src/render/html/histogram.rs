//! A span's per-call durations as a histogram on a log axis: the helper's
//! buckets (64 a power of two) pooled four a power of two, with the first
//! call, median, p95, p99 and max marked. An inline `<svg>`.

use crate::fmt::duration;
use crate::rundir::spans::SpanRecord;
use maud::{Markup, html};

const W: f64 = 560.0;
const H: f64 = 120.0;
/// Plot area: left, right, top, bottom.
const PLOT: (f64, f64, f64, f64) = (8.0, 552.0, 30.0, 96.0);
/// A mark's label: one character's width at 9 px, and the rows' baselines.
const LABEL_CHAR_PX: f64 = 5.6;
const LABEL_ROWS: [f64; 3] = [9.0, 17.0, 25.0];
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
            @for (_, s) in &marks {
                @let at = r1(x_of(*s));
                line.mark x1=(at) y1=(y0 - 4.0) x2=(at) y2=(y1) {}
            }
            @for (at, y, label) in labels(&marks.map(|(name, s)| (name, r1(x_of(s))))) {
                text.mark x=(at) y=(y) { (label) }
            }
            text x=(left) y=(H - 6.0) { (duration(2f64.powf(lo / PER_OCTAVE) / 1e9)) }
            text.end x=(right) y=(H - 6.0) { (duration(2f64.powf((hi + 1.0) / PER_OCTAVE) / 1e9)) }
        }
    })
}

/// The marks' labels, never over each other: marks at the same place
/// share one label ("first/max"), and each label takes the highest row
/// where it clears the labels already there.
fn labels(marks: &[(&str, f64)]) -> Vec<(f64, f64, String)> {
    let mut sorted: Vec<(&str, f64)> = marks.to_vec();
    sorted.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut groups: Vec<(f64, String)> = Vec::new();
    for (name, at) in sorted {
        match groups.last_mut() {
            Some((x, label)) if (at - *x).abs() < 1.0 => *label = format!("{label}/{name}"),
            _ => groups.push((at, name.to_string())),
        }
    }
    // Where each row's last label ends.
    let mut ends = [f64::NEG_INFINITY; LABEL_ROWS.len()];
    let mut out = Vec::new();
    for (at, label) in groups {
        let half = label.chars().count() as f64 * LABEL_CHAR_PX / 2.0;
        let row = (0..ends.len()).find(|&r| ends[r] + 2.0 <= at - half).unwrap_or_else(|| {
            // No row clears it: the one whose last label ends first.
            (0..ends.len()).min_by(|&a, &b| ends[a].total_cmp(&ends[b])).unwrap_or(0)
        });
        // Inside the picture, at its edges too.
        let at = r1(at.clamp(half, W - half));
        ends[row] = at + half;
        out.push((at, LABEL_ROWS[row], label));
    }
    out
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
        // Every mark is labelled, alone or sharing a label ("first/median").
        let labelled: Vec<&str> = svg
            .split("class=\"mark\"")
            .skip(1)
            .filter_map(|t| t.split_once('>')?.1.split_once("</text>"))
            .flat_map(|(label, _)| label.split('/'))
            .collect();
        for m in ["first", "median", "p95", "p99", "max"] {
            assert!(labelled.contains(&m), "{m}: {labelled:?}");
        }
        // Marks at one place share a label; close ones take other rows.
        let l = labels(&[("first", 100.0), ("median", 100.4), ("p95", 110.0), ("max", W)]);
        assert_eq!(l[0], (100.0, LABEL_ROWS[0], "first/median".to_string()));
        assert_eq!(l[1].1, LABEL_ROWS[1], "{l:?}");
        // At the right edge, drawn whole inside the picture.
        assert_eq!(l[2], (W - 1.5 * LABEL_CHAR_PX, LABEL_ROWS[0], "max".to_string()));
        let mut none = recs["f"].clone();
        none.buckets.clear();
        assert!(super::svg(&none).is_none());
    }
}
