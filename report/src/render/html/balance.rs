//! A cold preparation's load balance: round 1's parallel phase, a bar per
//! worker process from spawn to reap, split into its program's start-up
//! (a `--prepare` program's, to its ready line), the time its series or
//! items kept it busy, and the rest (waiting for work, handshake and
//! exit). What report.json keeps per worker (`parallel.workers`), so the
//! view is as long as the processes, never the items.

use crate::fmt::duration;
use crate::modes::cold_prep::Section;
use crate::rundir::report::PrepWorker;
use maud::{Markup, html};

const WIDTH: f64 = 1180.0;
const LEFT: f64 = 150.0;
const ROW: f64 = 18.0;

/// The view of `prep`, or nothing for a phase without workers.
pub fn view(prep: &Section) -> Option<Markup> {
    let workers = &prep.parallel.workers;
    if workers.is_empty() {
        return None;
    }
    let unit = prep.unit();
    let longest = workers.iter().map(|w| w.wall_s).fold(0.0, f64::max).max(1e-9);
    let inner = WIDTH - LEFT;
    let x = |s: f64| (s.max(0.0) / longest * inner * 10.0).round() / 10.0;
    let h = ROW * workers.len() as f64 + 24.0;
    let busy = prep.parallel.busy();
    Some(html! {
        section id="balance" {
            h2 { "Load balance" }
            p.note {
                "Round 1's parallel preparation, a bar per worker process from spawn to reap: "
                span.key.startup { "start-up" } " of its program, " span.key.busy { "busy" }
                " with its " (unit) ", and " span.key.idle { "the rest" }
                " (waiting for work, handshake, exit). The busiest worker was busy "
                (duration(busy.busiest_s)) " against a mean of " (duration(busy.mean_s)) ": load imbalance "
                (format!("{:.2}", prep.load_imbalance)) " (1.00 is even)."
            }
            @if let Some(st) = &prep.parallel.stragglers {
                p.note.stragglers {
                    (st.slowest_sentence())
                    @if let Some(tail) = st.tail_sentence(workers.len() as u32) { " " (tail) }
                }
            }
            svg.balance viewBox=(format!("0 0 {WIDTH} {h}")) width=(WIDTH) height=(h) {
                @for (i, w) in workers.iter().enumerate() {
                    @let y = ROW * i as f64 + 2.0;
                    @let startup = w.startup_s.unwrap_or(0.0);
                    text x="4" y=(y + 11.0) { "worker " (w.rank) " · " (w.series) " " (unit) }
                    rect.idle x=(LEFT) y=(y) width=(x(w.wall_s).max(0.5)) height=(ROW - 4.0) {
                        title { (bar_title(w, unit)) }
                    }
                    @if startup > 0.0 {
                        rect.startup x=(LEFT) y=(y) width=(x(startup).max(0.5)) height=(ROW - 4.0) {
                            title { "start-up: " (duration(startup)) }
                        }
                    }
                    rect.busy x=(LEFT + x(startup)) y=(y) width=(x(w.busy_s).max(0.5)) height=(ROW - 4.0) {
                        title { (bar_title(w, unit)) }
                    }
                }
                text x=(LEFT) y=(h - 6.0) { "0 s" }
                text.end x=(WIDTH) y=(h - 6.0) { (duration(longest)) " (the longest process)" }
            }
            table.sortable.balance {
                thead { tr {
                    th.num { "worker" } th.num { (unit) } th.num { "busy" } th.num { "start-up" }
                    th.num { "wall" } th.num { "busy share" } th.num { "CPU" } th.num { "peak RSS MiB" }
                } }
                tbody {
                    @for w in workers {
                        tr data-rank=(w.rank) {
                            td.num data-v=(w.rank) { (w.rank) }
                            td.num data-v=(w.series) { (w.series) }
                            td.num data-v=(w.busy_s) { (duration(w.busy_s)) }
                            @match w.startup_s {
                                Some(s) => td.num data-v=(s) { (duration(s)) },
                                None => td.num data-v="-1" { "–" },
                            }
                            td.num data-v=(w.wall_s) { (duration(w.wall_s)) }
                            td.num data-v=(share(w)) { (format!("{:.0}%", 100.0 * share(w))) }
                            td.num data-v=(w.cpu_s) { (duration(w.cpu_s)) }
                            @match w.peak_rss_bytes {
                                Some(b) => td.num data-v=(b) { (crate::fmt::mib_number(b)) },
                                None => td.num data-v="-1" { "–" },
                            }
                        }
                    }
                }
            }
        }
    })
}

/// The share of its life a worker was busy.
fn share(w: &PrepWorker) -> f64 {
    if w.wall_s > 0.0 { w.busy_s / w.wall_s } else { 0.0 }
}

fn bar_title(w: &PrepWorker, unit: &str) -> String {
    format!(
        "worker {}: {} {unit}, busy {} of {} ({:.0}%)",
        w.rank,
        w.series,
        duration(w.busy_s),
        duration(w.wall_s),
        100.0 * share(w)
    )
}
