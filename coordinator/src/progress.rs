//! What a person sees while a run goes on, on stderr (nothing with --quiet):
//! a line per finished stage for short plans; for phases of many jobs
//! (series) a live `done/total` counter on a terminal, or a line at every
//! tenth otherwise; for trials, one live line on a terminal (stage, trial i
//! of N, last and running median) and nothing otherwise. Machine-readable
//! results go to report.json.

use crate::events::{Event, Style};
use report::fmt::{duration, mib};
use std::collections::HashMap;
use std::io::IsTerminal;
use std::time::Instant;
use tokio::sync::mpsc;

struct Phase {
    key: String,
    jobs: usize,
    done: usize,
    style: Style,
    started: Instant,
    next_tenth: usize,
    /// When the live counter was last painted on a terminal.
    painted: Option<Instant>,
    /// Trials: wall times so far per stage key, warm-ups first.
    walls: HashMap<String, Vec<f64>>,
}

/// Prints events until the channel closes.
pub(crate) async fn print_events(mut rx: mpsc::UnboundedReceiver<Event>, quiet: bool) {
    let terminal = std::io::stderr().is_terminal();
    let mut phase: Option<Phase> = None;
    let clear = if terminal { "\r\x1b[2K" } else { "" };
    while let Some(ev) = rx.recv().await {
        if quiet {
            continue;
        }
        match ev {
            Event::PhaseStarted { key, jobs, style } => {
                if let Some(p) = &phase {
                    finish(p, clear);
                }
                phase = Some(Phase {
                    key,
                    jobs,
                    done: 0,
                    style,
                    started: Instant::now(),
                    next_tenth: 1,
                    painted: None,
                    walls: HashMap::new(),
                });
            }
            Event::StageStarted { rank, key } => {
                if terminal && phase.as_ref().is_some_and(|p| p.style == Style::LinePerJob) {
                    eprint!("{clear}  running {key} on {rank} …");
                }
            }
            Event::Progress { key, done, total } => {
                if terminal && phase.as_ref().is_some_and(|p| p.style == Style::LinePerJob) {
                    let pct = 100.0 * done as f64 / (total.max(1)) as f64;
                    eprint!("{clear}  running {key}: {done}/{total} ({pct:.0}%)");
                }
            }
            Event::StageFinished { rank, key, measurement: m } => {
                let Some(p) = phase.as_mut() else { continue };
                p.done += 1;
                if let Style::Trials { warmup, trials } = p.style {
                    let walls = p.walls.entry(key.clone()).or_default();
                    walls.push(m.wall_ns as f64 / 1e9);
                    if terminal {
                        eprint!("{clear}  {}", trial_line(&key, walls, warmup, trials));
                    }
                } else if p.style == Style::LinePerJob {
                    eprintln!(
                        "{clear}  [{}/{}] {key:<16} {rank:<9} wall {:>10}  CPU {:>10}  peak RSS {:>9}",
                        p.done,
                        p.jobs,
                        duration(m.wall_ns as f64 / 1e9),
                        duration((m.user_ns + m.sys_ns) as f64 / 1e9),
                        mib(m.peak_rss_bytes),
                    );
                } else {
                    counter(p, terminal, clear);
                }
            }
            Event::Counted { done } => {
                let Some(p) = phase.as_mut() else { continue };
                p.done = done;
                counter(p, terminal, clear);
            }
        }
    }
    if let Some(p) = &phase {
        if !quiet {
            finish(p, clear);
        }
    }
}

/// A phase of many jobs, `p.done` of them ended: the live counter on a
/// terminal, else a line at every tenth.
fn counter(p: &mut Phase, terminal: bool, clear: &str) {
    if terminal {
        let now = Instant::now();
        if !repaint_due(p.painted, now, p.done, p.jobs) {
            return;
        }
        p.painted = Some(now);
        let what = match p.style {
            Style::Counter { unit } => unit,
            _ => "jobs",
        };
        eprint!(
            "{clear}  {}: {}/{} {what}, {:.1} s",
            p.key,
            p.done,
            p.jobs,
            p.started.elapsed().as_secs_f64()
        );
    } else if let (Style::Counter { unit }, true) = (p.style, p.done * 10 >= p.next_tenth * p.jobs)
    {
        eprintln!(
            "  {}: {}/{} {unit}, {:.1} s",
            p.key,
            p.done,
            p.jobs,
            p.started.elapsed().as_secs_f64()
        );
        while p.done * 10 >= p.next_tenth * p.jobs {
            p.next_tenth += 1;
        }
    }
}

/// How often at most the live counter is painted: a phase of 10⁴ quick
/// items ends a job far faster than anyone reads (or a terminal draws).
const REPAINT: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether the live counter, last painted at `last`, is painted again at
/// `now` with `done` of `jobs` ended: at its first count, at its last, and
/// otherwise once a [`REPAINT`].
fn repaint_due(last: Option<Instant>, now: Instant, done: usize, jobs: usize) -> bool {
    done >= jobs || last.is_none_or(|t| now.duration_since(t) >= REPAINT)
}

/// `spin:40: trial 3 of 10, last 40.02 ms, running median 40.01 ms`.
fn trial_line(key: &str, walls: &[f64], warmup: u32, trials: u32) -> String {
    let last = duration(walls.last().copied().unwrap_or(f64::NAN));
    let i = walls.len();
    let w = warmup as usize;
    if i <= w {
        return format!("{key}: warm-up {i} of {warmup}, last {last}");
    }
    let median = duration(report::stats::distribution(&walls[w..]).median);
    format!("{key}: trial {} of {trials}, last {last}, running median {median}", i - w)
}

fn finish(p: &Phase, clear: &str) {
    if matches!(p.style, Style::Trials { .. } | Style::Prerequisite) {
        eprint!("{clear}");
    } else if let (Style::Counter { unit }, false) = (p.style, clear.is_empty()) {
        eprintln!(
            "{clear}  {}: {}/{} {unit}, {:.1} s",
            p.key,
            p.done,
            p.jobs,
            p.started.elapsed().as_secs_f64()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{REPAINT, repaint_due, trial_line};
    use std::time::Instant;

    #[test]
    fn the_live_counter_is_painted_at_most_once_a_tenth_of_a_second_and_at_its_last_job() {
        let t = Instant::now();
        let soon = t + REPAINT / 2;
        let later = t + REPAINT;
        assert!(repaint_due(None, t, 1, 100), "the first count");
        assert!(!repaint_due(Some(t), soon, 2, 100), "within the interval");
        assert!(repaint_due(Some(t), later, 2, 100), "after it");
        assert!(repaint_due(Some(t), soon, 100, 100), "the last job, however soon");
    }

    #[test]
    fn trial_line_counts_warmups_apart_and_shows_the_running_median() {
        let walls = [0.5, 0.010, 0.030, 0.020];
        assert_eq!(
            trial_line("spin:20", &walls[..1], 1, 3),
            "spin:20: warm-up 1 of 1, last 500.0 ms"
        );
        assert_eq!(
            trial_line("spin:20", &walls, 1, 3),
            "spin:20: trial 3 of 3, last 20.00 ms, running median 20.00 ms"
        );
        assert_eq!(
            trial_line("spin:20", &walls[..3], 1, 3),
            "spin:20: trial 2 of 3, last 30.00 ms, running median 20.00 ms"
        );
    }
}
