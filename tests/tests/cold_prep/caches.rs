//! What the caches hold: caches that differ fail the run, and the cache is
//! the reference extraction, checked against an independent one.

use harness::data::tiny;
use harness::{json, run};

/// A cold-prep run with a fault planted by the worker's debug-only hook
/// (`STAGEBENCH_TEST_PERTURB`, see `worker::planted`).
fn planted(
    perturb: &str,
    args: &[&str],
) -> (tempfile::TempDir, std::path::PathBuf, harness::Finished) {
    let (tmp, out, mut c) = harness::coordinator_with_output();
    c.env("STAGEBENCH_TEST_PERTURB", perturb);
    c.args(["--mode", "cold-prep", "--data"]).arg(&tiny().frozen).args(args);
    let f = run(c);
    (tmp, out, f)
}

/// A run with one value changed in `cache` fails with `caches_differ`, writes
/// no report, and its console line says `says`.
fn fails_as_differing(cache: &str, rounds: &str, says: &str) -> harness::Finished {
    let (_tmp, out, f) =
        planted(&format!("cache:{cache}"), &["--workers", "2", "--rounds", rounds]);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(f.stderr.contains(says), "the console says {says:?}: {}", f.stderr);
    assert!(!out.join("report.json").exists(), "a run whose caches differ has no report");
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "caches_differ", "{failure}");
    f
}

#[test]
fn caches_that_differ_fail_the_run_and_name_the_process_count() {
    // One value of one series in the 2-process cache: round 1's comparison.
    let parallel = "private-feature-cache-parallel";
    let f = fails_as_differing(parallel, "1", "the 1-process and 2-process caches differ");
    f.assert_no_worker_left();
    // A later round's serial cache against round 1's.
    let serial2 = "private-feature-cache-round2";
    fails_as_differing(serial2, "2", "private-feature-cache-round2 (1-process, round 2) differs");
    // A later round's largest-count cache is checked too, not sealed anew.
    let parallel2 = "private-feature-cache-parallel-round2";
    let says = "private-feature-cache-parallel-round2 (2-process, round 2) differs";
    fails_as_differing(parallel2, "2", says);

    // The control: the same hook aimed at a cache no phase writes changes
    // nothing, and the run succeeds with identical caches.
    let (_tmp, out, f) = planted("cache:no-such-cache", &["--workers", "2", "--rounds", "2"]);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::reports::read(&out);
    assert_eq!(harness::reports::cold_prep(&report).caches_identical, Some(true));
}

/// A frame's features computed here, by formulas of this test's own: the
/// time of day's cosine from the seconds since midnight, mean and
/// population standard deviation by Welford's one-pass update (the recipe
/// sums twice), validity as "no sample is NaN or infinite".
fn independent_features(secs: &[u32], enmo: &[f32], anglez: &[f32]) -> (Vec<[f64; 5]>, Vec<bool>) {
    use recipe::contract::{FRAME_SAMPLES, FRAME_STRIDE};
    fn welford(xs: &[f32]) -> (f64, f64) {
        let (mut mean, mut m2) = (0.0f64, 0.0f64);
        for (k, x) in xs.iter().enumerate() {
            let x = f64::from(*x);
            let delta = x - mean;
            mean += delta / (k + 1) as f64;
            m2 += delta * (x - mean);
        }
        (mean, (m2 / xs.len() as f64).sqrt())
    }
    let mut frames = Vec::new();
    let mut valid = Vec::new();
    let mut start = 0;
    while start + FRAME_SAMPLES <= secs.len() {
        let w = start..start + FRAME_SAMPLES;
        let tod = secs[w.clone()]
            .iter()
            .map(|s| (2.0 * std::f64::consts::PI * f64::from(*s) / 86_400.0).cos())
            .sum::<f64>()
            / FRAME_SAMPLES as f64;
        let (m, sd) = welford(&enmo[w.clone()]);
        let (am, asd) = welford(&anglez[w.clone()]);
        frames.push([tod, m, sd, am, asd]);
        valid.push(enmo[w.clone()].iter().chain(&anglez[w]).all(|x| x.is_finite()));
        start += FRAME_STRIDE;
    }
    (frames, valid)
}

#[test]
fn the_cache_is_the_reference_extraction() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "3", "--data"]).arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let frozen = recipe::frozen::Frozen::load(&tiny().frozen).unwrap();
    let (mut series, mut frames_checked, mut valid_checked) = (0, 0, 0);
    for s in frozen.train() {
        let bytes = std::fs::read(tiny().frozen.join(&s.file)).unwrap();
        let data = recipe::source::read_series(bytes.into(), &s.file, &s.id).unwrap();
        let reference =
            recipe::features::extract_reference(&data.local_seconds, &data.enmo, &data.anglez);
        let (mine, mine_valid) =
            independent_features(&data.local_seconds, &data.enmo, &data.anglez);
        let [values, valid] = recipe::cache::files(&s.id);
        for cache in ["private-feature-cache", "private-feature-cache-parallel"] {
            let v =
                recipe::npy::read_f32_2d(&std::fs::read(out.join(cache).join(&values)).unwrap())
                    .unwrap();
            assert!(
                v.iter().zip(&reference.values).all(|(a, b)| a.to_bits() == b.to_bits()),
                "{cache} {}",
                s.id
            );
            assert_eq!(v.len(), reference.values.len());
            let flags =
                recipe::npy::read_bool_1d(&std::fs::read(out.join(cache).join(&valid)).unwrap())
                    .unwrap();
            assert_eq!(flags, reference.valid);
            // Against this test's own formulas: the same frames, the same
            // validity, and every valid frame's values within f32 rounding
            // (a different order of arithmetic rounds differently).
            assert_eq!(v.nrows(), mine.len(), "{cache}: frame count");
            assert_eq!(flags.to_vec(), mine_valid, "{cache}: validity");
            for (j, expected) in mine.iter().enumerate().filter(|(j, _)| mine_valid[*j]) {
                for (k, e) in expected.iter().enumerate() {
                    let got = f64::from(v[[j, k]]);
                    let tolerance = 1e-5 * e.abs().max(1.0);
                    assert!(
                        (got - e).abs() <= tolerance,
                        "{cache} frame {j} feature {k}: cache {got}, independent {e}"
                    );
                }
                valid_checked += 1;
            }
            frames_checked += mine.len();
        }
        series += 1;
    }
    // Every training series was compared, in both caches, and most frames
    // were valid ones whose values were checked.
    assert_eq!(series, frozen.train().count());
    assert!(series >= 2, "the tiny cohort has {series} training series");
    assert!(valid_checked * 2 > frames_checked, "{valid_checked} of {frames_checked} frames");
}
