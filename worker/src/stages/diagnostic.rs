//! Diagnostic stages: known costs that tests and benchmarks rely on.

use super::{StageContext, StageError, write_artifact};
use protocol::{Figure, Stage};
use std::hint::black_box;
use std::time::{Duration, Instant};

const PAGE: usize = 4096;

pub(super) fn run(stage: &Stage, ctx: &mut StageContext<'_>) -> Result<Vec<Figure>, StageError> {
    match *stage {
        Stage::Noop => Ok(Vec::new()),
        Stage::Sleep { ms } => {
            std::thread::sleep(Duration::from_millis(ms));
            Ok(Vec::new())
        }
        Stage::Spin { ms } => {
            Ok(vec![Figure { name: "iterations".into(), value: spin(ms) as f64 }])
        }
        Stage::Alloc { mib } => {
            let held = alloc_and_touch(mib)?;
            let touched = held.len().div_ceil(PAGE);
            let figures = vec![Figure { name: "touched_pages".into(), value: touched as f64 }];
            drop(black_box(held));
            Ok(figures)
        }
        Stage::Write { kib } => {
            let bytes = pattern(kib as usize * 1024);
            let rel = format!("artifacts/{}.bin", ctx.job_tag);
            let sha = write_artifact(&ctx.run_dir, &rel, &bytes)?;
            ctx.reporter.artifact(&rel, sha);
            Ok(vec![Figure { name: "bytes".into(), value: bytes.len() as f64 }])
        }
        Stage::Fail => {
            Err(StageError::Failed("the diagnostic stage 'fail' failed as asked".into()))
        }
        Stage::Crash => {
            // Report some progress first so the crash happens mid-stage.
            ctx.reporter.progress(1, 2);
            std::process::abort()
        }
        _ => Err(StageError::Failed(format!("'{stage}' is not a diagnostic stage"))),
    }
}

/// Burns CPU until `ms` of wall time have passed; returns the iterations done.
fn spin(ms: u64) -> u64 {
    let deadline = Instant::now() + Duration::from_millis(ms);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut n = 0u64;
    while Instant::now() < deadline {
        for _ in 0..1_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        n += 1_000;
    }
    black_box(x);
    n
}

/// Allocates `mib` MiB and writes to every page, so it is resident; the
/// caller holds it until the stage ends. An allocation the allocator
/// refuses fails the stage in one line naming the size, instead of
/// aborting the worker.
fn alloc_and_touch(mib: u64) -> Result<Vec<u8>, StageError> {
    let refused = || StageError::Failed(format!("alloc:{mib}: cannot allocate {mib} MiB"));
    let len = usize::try_from(mib).ok().and_then(|m| m.checked_mul(1 << 20)).ok_or_else(refused)?;
    let mut v = match len {
        0 => Vec::new(),
        _ => {
            let layout = std::alloc::Layout::array::<u8>(len).map_err(|_| refused())?;
            // SAFETY: a non-zero layout; a null result is handled; the
            // zeroed block of `len` bytes of alignment 1 becomes a Vec<u8>
            // of that length and capacity, as the global allocator made it.
            unsafe {
                let p = std::alloc::alloc_zeroed(layout);
                if p.is_null() {
                    return Err(refused());
                }
                Vec::from_raw_parts(p, len, len)
            }
        }
    };
    for i in (0..len).step_by(PAGE) {
        v[i] = (i / PAGE) as u8 | 1;
    }
    black_box(&mut v);
    Ok(v)
}

/// Deterministic bytes (xorshift) so the same stage writes the same artifact.
fn pattern(len: usize) -> Vec<u8> {
    let mut x = 0x2545_f491_4f6c_dd1du64 ^ len as u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_deterministic_and_sized() {
        assert_eq!(pattern(1000), pattern(1000));
        assert_eq!(pattern(1000).len(), 1000);
        assert_ne!(pattern(1000)[..16], pattern(1001)[..16]);
    }

    #[test]
    fn alloc_touches_every_page() {
        // Measured, not computed: resident memory grows by what was asked.
        let rss = || {
            let status = std::fs::read_to_string("/proc/self/status").unwrap();
            let kib: u64 = status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap();
            kib << 10
        };
        let before = rss();
        let held = alloc_and_touch(64).unwrap();
        let grew = rss().saturating_sub(before);
        assert_eq!(held.len(), 64 << 20);
        assert!(grew >= 60 << 20, "64 MiB touched, resident memory grew by {grew} bytes");
        assert!(held.iter().step_by(PAGE).all(|b| *b & 1 == 1), "a page was not written");
        assert!(alloc_and_touch(0).unwrap().is_empty());
    }
}
