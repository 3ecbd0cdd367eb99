//! What a person sees while a run goes on: one line per finished stage on
//! stderr (nothing with --quiet). Machine-readable results go to report.json.

use crate::supervisor::Event;
use std::io::IsTerminal;
use tokio::sync::mpsc;

/// Prints events until the channel closes.
pub async fn print_events(mut rx: mpsc::UnboundedReceiver<Event>, quiet: bool, total: usize) {
    let terminal = std::io::stderr().is_terminal();
    let mut finished = 0usize;
    while let Some(ev) = rx.recv().await {
        if quiet {
            continue;
        }
        match ev {
            Event::StageStarted { rank, key } => {
                if terminal {
                    eprint!("\r\x1b[2K  running {key} on {rank} …");
                }
            }
            Event::Progress { key, done, total: of, .. } => {
                if terminal {
                    eprint!("\r\x1b[2K  running {key}: {done}/{of}");
                }
            }
            Event::StageFinished { rank, key, measurement: m } => {
                finished += 1;
                if terminal {
                    eprint!("\r\x1b[2K");
                }
                eprintln!(
                    "  [{finished}/{total}] {key:<16} {rank:<9} wall {:>8.3} s  cpu {:>8.3} s  peak RSS {:>9}",
                    m.wall_ns as f64 / 1e9,
                    (m.user_ns + m.sys_ns) as f64 / 1e9,
                    mib(m.peak_rss_bytes),
                );
            }
        }
    }
    if terminal && !quiet {
        eprint!("\r\x1b[2K");
    }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}
