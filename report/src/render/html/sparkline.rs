//! A series drawn small: a line through its values in order, a red line
//! at each change point, and one value ringed. The dashboard's column and
//! the history page's figures.

use maud::{Markup, html};

const W: f64 = 120.0;
const H: f64 = 24.0;

/// `values` in order (a non-finite one is left out of the line), a red
/// line before each index of `changes`, the value at `ring` ringed, and
/// `title` for the hover. Nothing for fewer than two finite values.
pub fn svg(values: &[f64], changes: &[usize], ring: Option<usize>, title: &str) -> Markup {
    let finite: Vec<f64> = values.iter().copied().filter(|w| w.is_finite()).collect();
    let (lo, hi) =
        finite.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &w| (a.min(w), b.max(w)));
    if finite.len() < 2 || !lo.is_finite() {
        return html! {};
    }
    let n = values.len();
    let x = |i: usize| 3.0 + (W - 6.0) * i as f64 / (n - 1).max(1) as f64;
    let y = |w: f64| {
        let span = (hi - lo).max(hi.abs() * 1e-9).max(1e-12);
        3.0 + (H - 6.0) * (1.0 - (w - lo) / span)
    };
    let r1 = |v: f64| (v * 10.0).round() / 10.0;
    let points: Vec<String> = values
        .iter()
        .enumerate()
        .filter(|(_, w)| w.is_finite())
        .map(|(i, w)| format!("{},{}", r1(x(i)), r1(y(*w))))
        .collect();
    let ring = ring.filter(|&i| values.get(i).is_some_and(|v| v.is_finite()));
    html! {
        svg.spark viewBox=(format!("0 0 {W} {H}")) width=(W) height=(H) {
            title { (title) }
            polyline points=(points.join(" ")) fill="none" stroke="#4c78a8" stroke-width="1.2" {}
            @for c in changes {
                line.change x1=(r1(x(*c))) y1="1" x2=(r1(x(*c))) y2=(H - 1.0) stroke="#e45756" stroke-width="1" {}
            }
            @if let Some(i) = ring {
                circle cx=(r1(x(i))) cy=(r1(y(values[i]))) r="2.5" fill="none" stroke="#000" {}
            }
        }
    }
}
