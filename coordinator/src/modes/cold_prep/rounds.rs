//! Rounds of the serial-against-parallel comparison, in alternating order.
//!
//! Whatever warms up during a run (the page cache, the CPU's clock, the
//! allocator) favours the phase that runs second, so one round with the
//! serial phase always first is biased. With `--rounds R`, odd rounds run
//! the serial phase first and even rounds the parallel one, each into
//! caches of its own, and the speedup is the median over rounds with a
//! bootstrap interval.
//!
//! Round 1 keeps the one-round names (its stages, its two caches and their
//! manifests are what a one-round report has). A later round's phases are
//! `<stage>#R` with caches `<cache>-roundR`: each is checked against round
//! 1's serial manifest as soon as it ends (outside every measured wall),
//! and removed once it matches, so R rounds need the disk of one.

use super::{PARALLEL, PARALLEL_CACHE, SERIAL, SERIAL_CACHE, side};
use crate::error::{RunError, fail};
use crate::modes::{Phase, PhaseOutcome};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Which phase of a round ran first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum First {
    Serial,
    Parallel,
}

impl First {
    /// Odd rounds serial first, even rounds parallel first.
    pub(crate) fn of(round: u32) -> First {
        if round % 2 == 1 { First::Serial } else { First::Parallel }
    }
}

/// One round's walls and CPU, as the report lists them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Round {
    pub(crate) round: u32,
    pub(crate) first: First,
    pub(crate) serial_wall_s: f64,
    pub(crate) parallel_wall_s: f64,
    pub(crate) serial_cpu_s: f64,
    pub(crate) parallel_cpu_s: f64,
    /// `serial_wall_s / parallel_wall_s`.
    pub(crate) speedup: f64,
}

/// A phase's key in round `round` (round 1 keeps the plain name).
pub(crate) fn key(base: &str, round: u32) -> String {
    if round == 1 { base.to_string() } else { format!("{base}#{round}") }
}

/// A phase's cache in round `round` (round 1 keeps the plain name).
pub(crate) fn cache(base: &str, round: u32) -> String {
    if round == 1 { base.to_string() } else { format!("{base}-round{round}") }
}

/// The keys of round `round`'s serial and parallel phases.
pub(crate) fn keys(round: u32) -> (String, String) {
    (key(SERIAL, round), key(PARALLEL, round))
}

/// The two caches of round `round`.
pub(crate) fn caches(round: u32) -> (String, String) {
    (cache(SERIAL_CACHE, round), cache(PARALLEL_CACHE, round))
}

/// The key of the parallel phase with `count` workers in round `round` of
/// a run whose largest count is `main`: the largest keeps the plain name,
/// another count of a sweep is `<stage>_w<count>`.
pub(crate) fn parallel_key(count: u32, main: u32, round: u32) -> String {
    if count == main { key(PARALLEL, round) } else { key(&format!("{PARALLEL}_w{count}"), round) }
}

/// The cache of that phase (`<cache>-w<count>` for another count).
pub(crate) fn parallel_cache(count: u32, main: u32, round: u32) -> String {
    if count == main {
        cache(PARALLEL_CACHE, round)
    } else {
        cache(&format!("{PARALLEL_CACHE}-w{count}"), round)
    }
}

/// Round `round`'s phases in the order they run: in odd rounds the serial
/// phase, then the parallel ones by increasing count; in even rounds the
/// reverse. After each phase: round 1's serial cache and largest count's
/// cache are sealed by their manifests; every other cache is checked
/// against round 1's serial one and removed.
pub(crate) fn in_order(round: u32, serial: Phase, mut parallel: Vec<Phase>) -> Vec<Phase> {
    parallel.sort_by_key(|p| p.workers);
    let last = parallel.len().saturating_sub(1);
    let mut phases = Vec::with_capacity(parallel.len() + 1);
    let mut serial = serial;
    serial.after = Some(if round == 1 { seal } else { check_and_remove });
    phases.push(serial);
    for (i, mut p) in parallel.into_iter().enumerate() {
        p.after = Some(if round == 1 && i == last { seal } else { check_and_remove });
        phases.push(p);
    }
    if First::of(round) == First::Parallel {
        phases.reverse();
    }
    phases
}

fn seal(dir: &Path, p: &PhaseOutcome, _: &mut [Phase]) -> Result<(), RunError> {
    side::seal(dir, p).map(|_| ())
}

/// A later round's cache must be byte-for-byte round 1's (the manifest over
/// every file's SHA-256); then it has served its purpose.
fn check_and_remove(dir: &Path, p: &PhaseOutcome, _: &mut [Phase]) -> Result<(), RunError> {
    let manifest = side::manifest(dir, p)?;
    let first = format!("{SERIAL_CACHE}/{}", super::MANIFEST);
    let sealed = std::fs::read(dir.join(&first)).map_err(|e| {
        fail(Some(p.phase.key.clone()), None, "internal", format!("reading {first}: {e}"))
    })?;
    let cache = p.phase.cache.as_deref().expect("preparation phases have a cache");
    if manifest != sealed {
        return Err(fail(
            Some(p.phase.key.clone()),
            None,
            "caches_differ",
            format!(
                "{cache} differs from {SERIAL_CACHE}: the same series prepared twice gave different files"
            ),
        ));
    }
    std::fs::remove_dir_all(dir.join(cache)).map_err(|e| {
        fail(Some(p.phase.key.clone()), None, "internal", format!("removing {cache}: {e}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_alternate_and_round_one_keeps_the_plain_names() {
        assert_eq!(First::of(1), First::Serial);
        assert_eq!(First::of(2), First::Parallel);
        assert_eq!(First::of(3), First::Serial);
        assert_eq!(keys(1), (SERIAL.to_string(), PARALLEL.to_string()));
        assert_eq!(keys(2).1, format!("{PARALLEL}#2"));
        assert_eq!(caches(1), (SERIAL_CACHE.to_string(), PARALLEL_CACHE.to_string()));
        assert_eq!(caches(3).0, format!("{SERIAL_CACHE}-round3"));
        assert_eq!(parallel_key(8, 8, 1), PARALLEL);
        assert_eq!(parallel_key(2, 8, 3), format!("{PARALLEL}_w2#3"));
        assert_eq!(parallel_cache(2, 8, 1), format!("{PARALLEL_CACHE}-w2"));
    }
}
