//! `verify` passes on an untouched run and fails after any single byte of
//! the declaration, environment, report or an artifact changes.

use harness::{coordinator, run};
use report::verify::verify;
use std::path::{Path, PathBuf};

fn a_run(tmp: &Path) -> PathBuf {
    let out = tmp.join("run");
    let mut c = coordinator();
    c.arg("--output").arg(&out).args(["--quiet", "--stage", "write:1", "--stage", "spin:5"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    out
}

#[test]
fn verify_passes_on_an_untouched_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = a_run(tmp.path());
    let v = verify(&out).expect("untouched run verifies");
    assert_eq!(v.artifacts, 1);
    let mut c = harness::coordinator();
    c.arg("verify").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert_eq!(
        f.stdout,
        format!(
            "verified {}: declaration, environment, report body and 1 artifact(s) match (diagnostic run, 2 stage or step record(s))\n",
            out.display()
        )
    );
}

/// Changes every byte of `file` in turn, several ways, and expects verify to
/// fail each time, then restores it and expects verify to pass again. The
/// replacements include ones that keep JSON valid and its value unchanged
/// (space to tab, `e` to `E` in an exponent), which only the canonical-form
/// check can catch. `STAGEBENCH_TEST_BYTE_STRIDE=K` changes every Kth byte
/// only (scripts/mutants.sh sets it, to run these tests once per mutant in
/// seconds); unset, every byte.
fn every_byte_change_is_caught(out: &Path, file: &str) {
    let path = out.join(file);
    let original = std::fs::read(&path).unwrap();
    let stride = std::env::var("STAGEBENCH_TEST_BYTE_STRIDE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|k| *k >= 1)
        .unwrap_or(1);
    for i in (0..original.len()).step_by(stride) {
        let b = original[i];
        let mut replacements = vec![b ^ 0x01, b ^ 0x20, b' ', b'\t', b'\n', b'0'];
        replacements.retain(|&r| r != b);
        for r in replacements {
            let mut bytes = original.clone();
            bytes[i] = r;
            std::fs::write(&path, &bytes).unwrap();
            assert!(
                verify(out).is_err(),
                "{file}: changing byte {i} ({:?} -> {:?}) went unnoticed",
                original[i] as char,
                bytes[i] as char
            );
        }
    }
    std::fs::write(&path, &original).unwrap();
    verify(out).expect("restored run verifies again");
}

#[test]
fn any_changed_byte_of_the_declaration_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    every_byte_change_is_caught(&a_run(tmp.path()), "declaration.json");
}

#[test]
fn any_changed_byte_of_the_environment_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    every_byte_change_is_caught(&a_run(tmp.path()), "environment.json");
}

#[test]
fn any_changed_byte_of_the_report_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    every_byte_change_is_caught(&a_run(tmp.path()), "report.json");
}

#[test]
fn any_changed_byte_of_the_summary_is_caught_and_render_restores_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = a_run(tmp.path());
    every_byte_change_is_caught(&out, "summary.md");
    let original = std::fs::read(out.join("summary.md")).unwrap();
    std::fs::write(out.join("summary.md"), b"# edited by hand\n").unwrap();
    assert!(verify(&out).unwrap_err().to_string().contains("summary.md differs"));
    let mut c = harness::coordinator();
    c.arg("render").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert_eq!(
        std::fs::read(out.join("summary.md")).unwrap(),
        original,
        "render is not byte for byte"
    );
    verify(&out).unwrap();
}

#[test]
fn any_changed_byte_of_an_artifact_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let out = a_run(tmp.path());
    every_byte_change_is_caught(&out, "artifacts/job-0-write.bin");
}

#[test]
fn verify_failures_name_what_differs_and_exit_3() {
    let tmp = tempfile::tempdir().unwrap();
    let out = a_run(tmp.path());
    let decl = out.join("declaration.json");
    let text = std::fs::read_to_string(&decl).unwrap().replace("\"workers\": 1", "\"workers\": 2");
    std::fs::write(&decl, text).unwrap();
    let mut c = harness::coordinator();
    c.arg("verify").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(3), "{}", f.stderr);
    assert!(
        f.stderr.contains("declaration.json does not match the report's declaration_sha256"),
        "{}",
        f.stderr
    );
    assert_eq!(f.stderr.lines().count(), 1, "{}", f.stderr);

    // A changed figure, even re-serialised canonically, breaks the body digest.
    let report = out.join("report.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    v["stages"]["spin:5"]["wall_s"] = serde_json::json!(0.001);
    std::fs::write(&report, evidence::to_bytes(&v)).unwrap();
    let err = verify(&out).unwrap_err().to_string();
    assert!(err.contains("body does not match its body_sha256"), "{err}");
}

#[test]
fn verify_of_a_failed_run_says_it_failed() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--stage", "fail"]);
    assert_eq!(run(c).code(), Some(1));
    let err = verify(&out).unwrap_err().to_string();
    assert!(err.starts_with("no report.json: the run failed (stage_failed:"), "{err}");
}

/// A copy of `from` at `to` (files and directories).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// An edit of a run directory: what it is, the edit, and what verify's
/// error must contain.
type Edit = (&'static str, Box<dyn Fn(&Path)>, String);

/// Applies each edit to a fresh copy of `run` (under `tmp`) that verifies,
/// and expects verify to fail naming what the edit says.
fn each_edit_is_named(tmp: &Path, run: &Path, edits: Vec<Edit>) {
    for (i, (what, edit, needle)) in edits.into_iter().enumerate() {
        let copy = tmp.join(format!("copy-{i}"));
        copy_dir(run, &copy);
        verify(&copy).unwrap_or_else(|e| panic!("{what}: the copy does not verify: {e}"));
        edit(&copy);
        let err = verify(&copy).expect_err(what).to_string();
        assert!(err.contains(&needle), "{what}: {err}");
    }
}

/// Flips one bit of `path`'s last byte, keeping its length.
fn flip_last_byte(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    *bytes.last_mut().unwrap() ^= 1;
    std::fs::write(path, &bytes).unwrap();
}

/// Edits that change a file's bytes, its length or the set of files, each
/// caught with a line that names the file.
#[test]
fn verify_catches_added_deleted_truncated_and_extended_files_and_agreeing_edits() {
    let tmp = tempfile::tempdir().unwrap();
    let run_dir = tmp.path().join("cold-prep");
    let mut c = coordinator();
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "2", "--data"])
        .arg(&harness::data::tiny().frozen)
        .arg("--output")
        .arg(&run_dir);
    assert_eq!(run(c).code(), Some(0));
    verify(&run_dir).expect("untouched");
    let cache = "private-feature-cache";
    let series = std::fs::read_dir(run_dir.join(cache))
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned();
    let values = format!("{cache}/{series}/values.npy");
    let cases: Vec<Edit> = vec![
        (
            "a file added beside the cache",
            Box::new(|d: &Path| {
                std::fs::write(d.join("private-feature-cache/extra.npy"), b"x").unwrap()
            }),
            "private-feature-cache/extra.npy is not bound by report.json".into(),
        ),
        (
            "a file added inside a series' directory of the cache",
            Box::new({
                let s = series.clone();
                move |d: &Path| {
                    std::fs::write(d.join(format!("private-feature-cache/{s}/extra.npy")), b"x")
                        .unwrap()
                }
            }),
            format!("private-feature-cache/{series}/extra.npy is not bound by report.json"),
        ),
        (
            "a file added two directories deep in the cache",
            Box::new(|d: &Path| {
                std::fs::create_dir_all(d.join("private-feature-cache/new/deeper")).unwrap();
                std::fs::write(d.join("private-feature-cache/new/deeper/x.npy"), b"x").unwrap()
            }),
            "private-feature-cache/new/deeper/x.npy is not bound by report.json".into(),
        ),
        (
            "a deleted artifact",
            Box::new(|d: &Path| {
                std::fs::remove_file(d.join("private-feature-cache/manifest.json")).unwrap()
            }),
            "private-feature-cache/manifest.json cannot be read".into(),
        ),
        (
            "a truncated cache file",
            Box::new({
                let v = values.clone();
                move |d: &Path| {
                    let f = std::fs::OpenOptions::new().write(true).open(d.join(&v)).unwrap();
                    let len = f.metadata().unwrap().len();
                    f.set_len(len - 4).unwrap();
                }
            }),
            format!("file {values} does not match"),
        ),
        (
            "one byte of a cache file changed, its length kept",
            Box::new({
                let v = values.clone();
                move |d: &Path| {
                    flip_last_byte(&d.join(&v));
                }
            }),
            format!("file {values} does not match"),
        ),
        (
            "bytes appended",
            Box::new({
                let v = values.clone();
                move |d: &Path| {
                    use std::io::Write;
                    let mut f = std::fs::OpenOptions::new().append(true).open(d.join(&v)).unwrap();
                    f.write_all(b"\0\0\0\0").unwrap();
                }
            }),
            format!("file {values} does not match"),
        ),
        (
            "a cache file and its manifest edited to agree",
            Box::new({
                let v = values.clone();
                let s = series.clone();
                move |d: &Path| {
                    flip_last_byte(&d.join(&v));
                    let (sha, n) = evidence::file_sha256(&d.join(&v)).unwrap();
                    let m = d.join("private-feature-cache/manifest.json");
                    let mut j: serde_json::Value =
                        serde_json::from_slice(&std::fs::read(&m).unwrap()).unwrap();
                    j["files"][format!("{s}/values.npy")] =
                        serde_json::json!({"sha256": sha, "bytes": n});
                    std::fs::write(&m, evidence::to_bytes(&j)).unwrap();
                }
            }),
            "artifact private-feature-cache/manifest.json does not match its recorded SHA-256"
                .into(),
        ),
    ];
    each_edit_is_named(tmp.path(), &run_dir, cases);
}

/// A killed run's failure.json is sealed: a changed reason or message,
/// even written back in canonical form, fails verification.
#[test]
fn an_edited_failure_json_of_a_killed_run_is_caught() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("killed");
    let mut c = coordinator();
    c.arg("--output").arg(&out).args(["--quiet", "--command", "sleep 5", "--name", "nap"]);
    c.args(["--kill-at", "nap:after:0.2"]);
    assert_eq!(run(c).code(), Some(1));
    let v = verify(&out).expect("a killed run verifies as killed");
    assert!(v.killed);
    assert_eq!(
        v.to_string(),
        "declaration and environment match failure.json (diagnostic run killed at its declared point, so no report)"
    );
    let path = out.join("failure.json");
    let mut j: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    j["message"] = serde_json::json!("nothing to see");
    std::fs::write(&path, evidence::to_bytes(&j)).unwrap();
    let err = verify(&out).unwrap_err().to_string();
    assert!(err.contains("failure.json body does not match its body_sha256"), "{err}");
}

/// Verify walks every entry under a run: anything no binding accounts for
/// fails with its name, whatever it holds. The symlink points at a byte-for-
/// byte copy of the artifact outside the run, so no hash can catch it.
#[test]
fn verify_names_every_entry_no_binding_accounts_for() {
    let tmp = tempfile::tempdir().unwrap();
    let out = a_run(tmp.path());
    let artifact = std::fs::read_dir(out.join("artifacts"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .file_name()
        .to_string_lossy()
        .into_owned();
    let outside = tmp.path().join("outside.bin");
    std::fs::copy(out.join("artifacts").join(&artifact), &outside).unwrap();
    let cases: Vec<Edit> = vec![
        (
            "a stray file in the run root",
            Box::new(|d: &Path| std::fs::write(d.join("notes.txt"), b"").unwrap()),
            "notes.txt is not bound by report.json".into(),
        ),
        (
            "a stray file in artifacts/",
            Box::new(|d: &Path| std::fs::write(d.join("artifacts/x.bin"), b"").unwrap()),
            "artifacts/x.bin is not bound".into(),
        ),
        (
            "a stray file in plots/",
            Box::new(|d: &Path| std::fs::write(d.join("plots/old.png"), b"").unwrap()),
            "plots/old.png is not bound".into(),
        ),
        (
            "an empty directory",
            Box::new(|d: &Path| std::fs::create_dir(d.join("logs")).unwrap()),
            "logs/ is an empty directory".into(),
        ),
        (
            "a renamed summary",
            Box::new(|d: &Path| {
                std::fs::rename(d.join("summary.md"), d.join("summary.txt")).unwrap()
            }),
            "cannot read summary.md".into(),
        ),
        (
            "an artifact replaced by a symlink to an identical file outside the run",
            Box::new({
                let (a, o) = (artifact.clone(), outside.clone());
                move |d: &Path| {
                    let p = d.join("artifacts").join(&a);
                    std::fs::remove_file(&p).unwrap();
                    std::os::unix::fs::symlink(&o, &p).unwrap();
                }
            }),
            format!("artifacts/{artifact} is a symbolic link"),
        ),
        (
            "a failure.json beside the report",
            Box::new(|d: &Path| std::fs::write(d.join("failure.json"), b"{}").unwrap()),
            "both report.json and failure.json".into(),
        ),
    ];
    each_edit_is_named(tmp.path(), &out, cases);
}

/// A killed run keeps only its declaration, environment and failure.json.
#[test]
fn a_killed_run_with_anything_beside_its_failure_does_not_verify() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("killed");
    let mut c = coordinator();
    c.arg("--output").arg(&out).args(["--quiet", "--command", "sleep 5", "--name", "nap"]);
    c.args(["--kill-at", "nap:after:0.2"]);
    assert_eq!(run(c).code(), Some(1));
    verify(&out).expect("a killed run verifies as killed");
    std::fs::write(out.join("summary.md"), b"all fine\n").unwrap();
    let err = verify(&out).unwrap_err().to_string();
    assert!(err.contains("summary.md is not bound"), "{err}");
}
