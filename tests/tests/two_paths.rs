//! The same frozen dataset at two paths is the same input: runs on either
//! copy compare, and no path of either appears in their evidence. (Before,
//! a phase's definition hash included the dataset's absolute path, so two
//! machines with different home directories could never be compared.)

use harness::data::{copy_dir, tiny};
use harness::{coordinator, coordinator_with_output, files_below, json, run};
use std::path::{Path, PathBuf};

/// A copy of the tiny frozen cohort under a directory whose name is easy
/// to find in evidence if it leaked.
fn copy_at(root: &Path, name: &str) -> PathBuf {
    let dir = root.join(name).join("frozen-data");
    copy_dir(&tiny().frozen, &dir);
    dir
}

/// Every text file of a run directory (evidence, summary, SVG plots).
fn texts(dir: &Path) -> Vec<(String, String)> {
    files_below(dir)
        .into_iter()
        .filter(|f| !f.ends_with(".png") && !f.ends_with(".npy") && !f.ends_with(".parquet"))
        .filter_map(|f| std::fs::read_to_string(dir.join(&f)).ok().map(|t| (f, t)))
        .collect()
}

fn assert_no_path(run: &Path, paths: &[&Path]) {
    let texts = texts(run);
    assert!(texts.iter().any(|(f, _)| f == "report.json"), "no report in {}", run.display());
    for (file, text) in texts {
        for p in paths {
            let p = p.to_str().unwrap();
            assert!(!text.contains(p), "{file} of {} names the input path {p}", run.display());
        }
        for marker in ["copy-one", "copy-two", "state-one", "state-two"] {
            assert!(!text.contains(marker), "{file} of {} names {marker}", run.display());
        }
    }
}

fn declared_definitions(run: &Path) -> Vec<(String, String)> {
    let d = json(&run.join("declaration.json"));
    d["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            let key = s["key"].as_str().unwrap().to_string();
            (key, s["definition_sha256"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn cold_prep_on_two_copies_of_a_dataset_compares_and_names_neither() {
    let root = tempfile::tempdir().unwrap();
    let (one, two) = (copy_at(root.path(), "copy-one"), copy_at(root.path(), "copy-two"));
    let mut keep = Vec::new();
    let mut runs = Vec::new();
    for data in [&one, &two] {
        let (tmp, out, mut c) = coordinator_with_output();
        c.args(["--quiet", "--mode", "cold-prep", "--workers", "2", "--data"]).arg(data);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        keep.push(tmp);
        runs.push(out);
    }
    let defs = declared_definitions(&runs[0]);
    // verify_before, each of the 3 default rounds' two phases, verify_after.
    assert_eq!(defs.len(), 8, "eight stages declared: {defs:?}");
    assert_eq!(defs, declared_definitions(&runs[1]), "definitions depend on the path");

    let mut c = coordinator();
    c.arg("compare").arg(&runs[0]).arg(&runs[1]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}{}", f.stdout, f.stderr);
    assert!(!f.stdout.starts_with("NOT COMPARABLE"), "{}", f.stdout);
    let rows: Vec<&str> =
        f.stdout.lines().filter(|l| l.starts_with("cold_feature_cache_prepare")).collect();
    assert!(rows.len() >= 2, "both preparations compared:\n{}", f.stdout);
    // Each phase's 3 rounds are 3 samples of it, not stages of their own.
    assert!(!f.stdout.contains('#'), "a round compared alone:\n{}", f.stdout);
    for row in rows {
        let n: Vec<&str> = row.split_whitespace().skip(2).take(2).collect();
        assert_eq!(n, ["3", "3"], "{row}");
    }

    for r in &runs {
        assert_no_path(r, &[&one, &two, root.path()]);
    }
}

/// The recipe (its state directory too) and a trials run of a recipe stage
/// declare the same definitions wherever their inputs live.
#[test]
fn recipe_and_trials_definitions_hash_no_paths() {
    let root = tempfile::tempdir().unwrap();
    let (one, two) = (copy_at(root.path(), "copy-one"), copy_at(root.path(), "copy-two"));
    let mut keep = Vec::new();
    let mut recipe_runs = Vec::new();
    let mut trial_runs = Vec::new();
    for (data, state) in [(&one, "state-one"), (&two, "state-two")] {
        let (tmp, out, mut c) = coordinator_with_output();
        c.args(["--quiet", "--mode", "recipe", "--epochs", "1", "--data"]).arg(data);
        c.arg("--state").arg(root.path().join(state));
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        keep.push(tmp);
        recipe_runs.push(out);

        let (tmp, out, mut c) = coordinator_with_output();
        c.args(["--quiet", "--mode", "trials", "--trials", "2", "--warmup", "0"]);
        c.args(["--stage", "warm_fit_normalizer", "--data"]).arg(data);
        let f = run(c);
        assert_eq!(f.code(), Some(0), "{}", f.stderr);
        keep.push(tmp);
        trial_runs.push(out);
    }
    for runs in [&recipe_runs, &trial_runs] {
        let defs = declared_definitions(&runs[0]);
        assert!(defs.len() >= 2, "{defs:?}");
        assert_eq!(defs, declared_definitions(&runs[1]), "definitions depend on the path");
        for r in runs.iter() {
            assert_no_path(r, &[&one, &two, root.path()]);
        }
    }
}
