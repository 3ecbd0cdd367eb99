//! The README's main job: with no --data, the built-in small cohort is made
//! once (in child processes, so the coordinator stays small), reused, and
//! checked by its fingerprint on every use.

use harness::{coordinator_with_output, json, run};

#[test]
fn the_built_in_cohort_is_made_once_reused_and_checked() {
    let cache = tempfile::tempdir().unwrap();
    let first = {
        let (_tmp, out, mut c) = coordinator_with_output();
        c.env("STAGEBENCH_CACHE", cache.path()).args(["--mode", "cold-prep", "--workers", "2"]);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        assert!(f.stderr.contains("preparing the built-in small synthetic cohort"), "{}", f.stderr);
        let report = harness::reports::read(&out);
        let r = harness::reports::cold_prep(&report);
        assert_eq!(r.caches_identical, Some(true));
        let counts = r.counts.as_ref().expect("the recipe's counts");
        assert_eq!(counts.train_series, 25, "36 series split 25/5/6");
        // The coordinator generated nothing itself: its peak, which Linux
        // carries into every worker, stayed small.
        for w in &report.workers {
            assert!(w.peak_rss_floor_bytes < 48 << 20, "{w:?}");
        }
        assert!(harness::reports::stage(&report, "verify_before").peak_rss_bytes < 48 << 20);
        f.assert_no_worker_left();
        json(&out.join("declaration.json"))["dataset_fingerprint"].clone()
    };
    let frozen = cache.path().join("datasets/small-seed0/frozen.json");
    assert_eq!(json(&frozen)["fingerprint"], first);

    // Reused, not remade.
    let (_tmp, out, mut c) = coordinator_with_output();
    c.env("STAGEBENCH_CACHE", cache.path()).args(["--mode", "cold-prep", "--quiet"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(!f.stderr.contains("preparing"), "{}", f.stderr);
    assert_eq!(json(&out.join("declaration.json"))["dataset_fingerprint"], first);

    // Checked on every use: an edited frozen.json is refused, not regenerated over.
    let original = std::fs::read_to_string(&frozen).unwrap();
    let text =
        std::fs::read_to_string(&frozen).unwrap().replacen("\"samples\": ", "\"samples\": 9", 1);
    std::fs::write(&frozen, &text).unwrap();
    let (_tmp, out, mut c) = coordinator_with_output();
    c.env("STAGEBENCH_CACHE", cache.path()).args(["--mode", "cold-prep"]);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("edited after freezing"), "{}", f.stderr);
    // And the error says how to remake it.
    assert!(
        f.stderr.contains("remove that directory and run again to regenerate it"),
        "{}",
        f.stderr
    );
    assert!(!out.exists());
    assert_eq!(std::fs::read_to_string(&frozen).unwrap(), text, "the user's cache was rewritten");

    // A source that changed since freezing is caught by the run, which says
    // how to remake the cohort on stderr (failure.json names no path).
    std::fs::write(&frozen, &original).unwrap();
    // The "no": a run on the intact cohort that fails for another reason (a
    // stage timeout) gets no remake advice.
    let (_tmp, _out, mut c) = coordinator_with_output();
    c.env("STAGEBENCH_CACHE", cache.path());
    c.args(["--mode", "cold-prep", "--quiet", "--stage-timeout", "0.001"]);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(!f.stderr.contains("regenerate"), "{}", f.stderr);

    let (_tmp, out, mut c) = coordinator_with_output();
    let source = std::fs::read_dir(cache.path().join("datasets/small-seed0/sources"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "parquet"))
        .unwrap();
    let mut bytes = std::fs::read(&source).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&source, bytes).unwrap();
    c.env("STAGEBENCH_CACHE", cache.path()).args(["--mode", "cold-prep", "--quiet"]);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(f.stderr.contains("has changed since freezing"), "{}", f.stderr);
    assert!(
        f.stderr.contains("remove that directory and run again to regenerate it"),
        "{}",
        f.stderr
    );
    let failure = std::fs::read_to_string(out.join("failure.json")).unwrap();
    assert!(!failure.contains("regenerate"), "{failure}");
}
