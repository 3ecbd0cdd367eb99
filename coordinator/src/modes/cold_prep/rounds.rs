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
//! 1's serial manifest as soon as it ends (outside every measured wall).
//! The checked caches are removed together after the run's last
//! preparation phase, not one by one: on a file system that is slow to
//! reuse freed inodes (ext4 without a journal skips every inode freed in
//! the last 5 s to 5 min), a removal would make the next phase's file
//! creation cost several times more (scripts/bench-file-creation.py), and
//! that phase would pay for the method. So R rounds hold R caches per
//! count until the preparation ends.

use super::{Names, side};
use crate::error::{RunError, fail};
use crate::modes::{Phase, PhaseOutcome};
use report::modes::cold_prep::rounds::First;
use std::path::Path;

// A phase's key in round `round` (round 1 keeps the plain name), and the
// inverse: the stage keys' repeat rule, report's.
use report::rundir::keys::{repeat_key, repeat_of};

/// A phase's cache in round `round` (round 1 keeps the plain name).
pub(crate) fn cache(base: &str, round: u32) -> String {
    if round == 1 { base.to_string() } else { format!("{base}-round{round}") }
}

/// The keys of round `round`'s serial and parallel phases.
pub(crate) fn keys(n: &Names, round: u32) -> (String, String) {
    (repeat_key(&n.serial, round), repeat_key(&n.parallel, round))
}

/// The two caches of round `round`.
pub(crate) fn caches(n: &Names, round: u32) -> (String, String) {
    (cache(&n.serial_out, round), cache(&n.parallel_out, round))
}

/// The key of the parallel phase with `count` workers in round `round` of
/// a run whose largest count is `main`: the largest keeps the plain name,
/// another count of a sweep is `<stage>_w<count>`.
pub(crate) fn parallel_key(n: &Names, count: u32, main: u32, round: u32) -> String {
    if count == main {
        repeat_key(&n.parallel, round)
    } else {
        repeat_key(&format!("{}_w{count}", &n.parallel), round)
    }
}

/// The cache of that phase (`<cache>-w<count>` for another count).
pub(crate) fn parallel_cache(n: &Names, count: u32, main: u32, round: u32) -> String {
    if count == main {
        cache(&n.parallel_out, round)
    } else {
        cache(&format!("{}-w{count}", &n.parallel_out), round)
    }
}

/// Round `round`'s phases in the order they run: in odd rounds the serial
/// phase, then the parallel ones by increasing count; in even rounds the
/// reverse. After each phase: round 1's serial cache and largest count's
/// cache are sealed by their manifests; every other cache is checked
/// against round 1's serial one. After the last phase of the `last` round,
/// every checked cache is removed.
pub(crate) fn in_order(
    round: u32,
    serial: Phase,
    mut parallel: Vec<Phase>,
    last: bool,
) -> Vec<Phase> {
    parallel.sort_by_key(|p| p.workers);
    let top = parallel.len().saturating_sub(1);
    let mut phases: Vec<(Phase, bool)> = vec![(serial, round == 1)];
    phases.extend(parallel.into_iter().enumerate().map(|(i, p)| (p, round == 1 && i == top)));
    if First::of(round) == First::Parallel {
        phases.reverse();
    }
    let end = phases.len() - 1;
    phases
        .into_iter()
        .enumerate()
        .map(|(i, (mut p, sealed))| {
            p.after = Some(match (sealed, last && i == end) {
                (true, false) => seal,
                (false, false) => check,
                (true, true) => seal_then_clear,
                (false, true) => check_then_clear,
            });
            p
        })
        .collect()
}

fn seal(dir: &Path, p: &PhaseOutcome, _: &mut [Phase]) -> Result<(), RunError> {
    side::seal(dir, p).map(|_| ())
}

fn seal_then_clear(dir: &Path, p: &PhaseOutcome, rest: &mut [Phase]) -> Result<(), RunError> {
    seal(dir, p, rest)?;
    clear(dir, &crate::modes::preparation::names_of(&p.phase), &p.phase.key)
}

fn check_then_clear(dir: &Path, p: &PhaseOutcome, rest: &mut [Phase]) -> Result<(), RunError> {
    check(dir, p, rest)?;
    clear(dir, &crate::modes::preparation::names_of(&p.phase), &p.phase.key)
}

/// Removes every checked cache: every output of the run's kind of
/// preparation but the sealed ones ([`Names::is_checked_output`]: the
/// plain names' serial and parallel outputs, and each scanned value's).
fn clear(dir: &Path, n: &Names, key: &str) -> Result<(), RunError> {
    let failed = |e: std::io::Error| {
        fail(Some(key.to_string()), None, "internal", format!("removing checked caches: {e}"))
    };
    let plain = if n.items {
        report::modes::preparation::ITEMS
    } else {
        report::modes::preparation::RECIPE
    };
    for entry in std::fs::read_dir(dir).map_err(failed)? {
        let entry = entry.map_err(failed)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if plain.is_checked_output(&name) && entry.file_type().map_err(failed)?.is_dir() {
            std::fs::remove_dir_all(entry.path()).map_err(failed)?;
        }
    }
    Ok(())
}

/// A later round's cache must be byte-for-byte round 1's (the manifest over
/// every file's SHA-256).
fn check(dir: &Path, p: &PhaseOutcome, _: &mut [Phase]) -> Result<(), RunError> {
    let n = crate::modes::preparation::names_of(&p.phase);
    let manifest = side::manifest(dir, p)?;
    let first = format!("{}/{}", &n.serial_out, super::MANIFEST);
    let sealed = std::fs::read(dir.join(&first)).map_err(|e| {
        fail(Some(p.phase.key.clone()), None, "internal", format!("reading {first}: {e}"))
    })?;
    let cache = crate::modes::preparation::side::Preparation::of(p)?.cache;
    let round = repeat_of(&p.phase.key).map_or(1, |(_, r)| r);
    if manifest != sealed && n.items {
        let what = format!(
            "{cache} ({}-process, round {round}) differs from {} (1-process, round 1)",
            p.phase.workers, n.serial_out
        );
        return Err(crate::modes::preparation::outputs::outputs_differ(
            &p.phase.key,
            what,
            &sealed,
            &manifest,
        ));
    }
    if manifest != sealed {
        return Err(fail(
            Some(p.phase.key.clone()),
            None,
            "caches_differ",
            format!(
                "{cache} ({}-process, round {round}) differs from {} (1-process, round 1): the same series prepared twice gave different files",
                p.phase.workers, &n.serial_out,
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::modes::preparation::{PARALLEL, PARALLEL_CACHE, RECIPE, SERIAL, SERIAL_CACHE};

    #[test]
    fn rounds_alternate_and_round_one_keeps_the_plain_names() {
        assert_eq!(First::of(1), First::Serial);
        assert_eq!(First::of(2), First::Parallel);
        assert_eq!(First::of(3), First::Serial);
        let n = &RECIPE;
        assert_eq!(keys(n, 1), (SERIAL.to_string(), PARALLEL.to_string()));
        assert_eq!(keys(n, 2).1, format!("{PARALLEL}#2"));
        assert_eq!(caches(n, 1), (SERIAL_CACHE.to_string(), PARALLEL_CACHE.to_string()));
        assert_eq!(caches(n, 3).0, format!("{SERIAL_CACHE}-round3"));
        assert_eq!(parallel_key(n, 8, 8, 1), PARALLEL);
        assert_eq!(parallel_key(n, 2, 8, 3), format!("{PARALLEL}_w2#3"));
        assert_eq!(parallel_cache(n, 2, 8, 1), format!("{PARALLEL_CACHE}-w2"));
        let items = &report::modes::preparation::ITEMS;
        assert_eq!(caches(items, 1), ("private-output".into(), "private-output-parallel".into()));
    }

    #[test]
    fn a_later_rounds_key_reads_back_as_its_phase_and_round() {
        for round in [2, 3, 10] {
            assert_eq!(repeat_of(&repeat_key(SERIAL, round)), Some((SERIAL, round)));
        }
        for not_later in [SERIAL, "a#1", "a#0", "a#", "#2", "a#02", "a#+2", "a#x"] {
            assert_eq!(repeat_of(not_later), None, "{not_later}");
        }
    }

    #[test]
    fn clearing_a_scans_outputs_keeps_each_values_sealed_pair() {
        let dir = tempfile::tempdir().unwrap();
        let items = &report::modes::preparation::ITEMS;
        let v = items.of_value("chunk=64");
        let kept = [
            "private-output",
            "private-output-parallel",
            "private-output[chunk=64]",
            "private-output[chunk=64]-parallel",
            "private-output[]-round2",
            "private-outputs",
        ];
        let removed = [
            "private-output-round2",
            "private-output[chunk=64]-round2",
            "private-output[chunk=64]-parallel-round3",
            "private-output[chunk=-w2]-parallel-round3",
        ];
        for d in kept.iter().chain(&removed) {
            std::fs::create_dir(dir.path().join(d)).unwrap();
        }
        clear(dir.path(), &v, "k").unwrap();
        for d in kept {
            assert!(dir.path().join(d).exists(), "{d} was removed");
        }
        for d in removed {
            assert!(!dir.path().join(d).exists(), "{d} was kept");
        }
    }

    #[test]
    fn clearing_removes_the_checked_caches_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let kept = [SERIAL_CACHE, PARALLEL_CACHE, "plots", "private-feature-cacheless"];
        let removed = [
            format!("{SERIAL_CACHE}-round2"),
            format!("{PARALLEL_CACHE}-round2"),
            format!("{PARALLEL_CACHE}-w2"),
            format!("{PARALLEL_CACHE}-w2-round3"),
        ];
        for d in kept.iter().map(|d| d.to_string()).chain(removed.iter().cloned()) {
            std::fs::create_dir(dir.path().join(&d)).unwrap();
            std::fs::write(dir.path().join(&d).join("manifest.json"), b"{}").unwrap();
        }
        // A file with a cache's prefix is not a cache.
        std::fs::write(dir.path().join(format!("{SERIAL_CACHE}-note")), b"x").unwrap();
        clear(dir.path(), &RECIPE, "k").unwrap();
        for d in kept {
            assert!(dir.path().join(d).join("manifest.json").exists(), "{d} was removed");
        }
        for d in &removed {
            assert!(!dir.path().join(d).exists(), "{d} was kept");
        }
        assert!(dir.path().join(format!("{SERIAL_CACHE}-note")).exists());
    }
}
