//! What a person sees while a run goes on, on stderr (nothing with --quiet):
//! a line per finished stage for short plans, and for phases of many jobs
//! (series) a live `done/total` counter on a terminal, or a line at every
//! tenth otherwise. Machine-readable results go to report.json.

use crate::supervisor::Event;
use std::io::IsTerminal;
use std::time::Instant;
use tokio::sync::mpsc;

struct Phase {
    key: String,
    jobs: usize,
    done: usize,
    line_per_job: bool,
    started: Instant,
    next_tenth: usize,
}

/// Prints events until the channel closes.
pub async fn print_events(mut rx: mpsc::UnboundedReceiver<Event>, quiet: bool) {
    let terminal = std::io::stderr().is_terminal();
    let mut phase: Option<Phase> = None;
    let clear = if terminal { "\r\x1b[2K" } else { "" };
    while let Some(ev) = rx.recv().await {
        if quiet {
            continue;
        }
        match ev {
            Event::PhaseStarted { key, jobs, line_per_job } => {
                if let Some(p) = &phase {
                    finish(p, clear);
                }
                phase = Some(Phase {
                    key,
                    jobs,
                    done: 0,
                    line_per_job,
                    started: Instant::now(),
                    next_tenth: 1,
                });
            }
            Event::StageStarted { rank, key } => {
                if terminal && phase.as_ref().is_some_and(|p| p.line_per_job) {
                    eprint!("{clear}  running {key} on {rank} …");
                }
            }
            Event::Progress { key, done, total, .. } => {
                if terminal && phase.as_ref().is_some_and(|p| p.line_per_job) {
                    eprint!("{clear}  running {key}: {done}/{total}");
                }
            }
            Event::StageFinished { rank, key, measurement: m } => {
                let Some(p) = phase.as_mut() else { continue };
                p.done += 1;
                if p.line_per_job {
                    eprintln!(
                        "{clear}  [{}/{}] {key:<16} {rank:<9} wall {:>8.3} s  cpu {:>8.3} s  peak RSS {:>9}",
                        p.done,
                        p.jobs,
                        m.wall_ns as f64 / 1e9,
                        (m.user_ns + m.sys_ns) as f64 / 1e9,
                        mib(m.peak_rss_bytes),
                    );
                } else if terminal {
                    eprint!(
                        "{clear}  {}: {}/{} series, {:.1} s",
                        p.key,
                        p.done,
                        p.jobs,
                        p.started.elapsed().as_secs_f64()
                    );
                } else if p.done * 10 >= p.next_tenth * p.jobs {
                    eprintln!(
                        "  {}: {}/{} series, {:.1} s",
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
        }
    }
    if let Some(p) = &phase {
        if !quiet {
            finish(p, clear);
        }
    }
}

fn finish(p: &Phase, clear: &str) {
    if !p.line_per_job && !clear.is_empty() {
        eprintln!(
            "{clear}  {}: {}/{} series, {:.1} s",
            p.key,
            p.done,
            p.jobs,
            p.started.elapsed().as_secs_f64()
        );
    }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
