//! One ending per run: report.json (written last, after summary.md and the
//! plots) with everything it names, or failure.json beside only the
//! declaration and environment, never both, and a console line that says
//! which. Driven by a full disk: a tmpfs of each size from 4 KiB to 128 KiB (and 512)
//! where root can mount one. `STAGEBENCH_TMPFS_REQUIRED` (`.ci/run` sets it
//! where it mounted a probe) turns "cannot mount here" into a failure.

use harness::{coordinator, run, run_campaign};
use std::path::{Path, PathBuf};
use std::process::Command;

const REQUIRED: &str = "STAGEBENCH_TMPFS_REQUIRED";

/// Why a tmpfs could not be mounted here, as mount or the system said it.
#[derive(Debug)]
struct NoTmpfs(String);

impl std::fmt::Display for NoTmpfs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tmpfs mounted for the test, unmounted on drop.
struct Tmpfs {
    _dir: tempfile::TempDir,
    at: PathBuf,
}

impl Tmpfs {
    fn mount(kib: u32) -> Result<Tmpfs, NoTmpfs> {
        let dir = tempfile::tempdir().map_err(|e| NoTmpfs(e.to_string()))?;
        let at = dir.path().join("fs");
        std::fs::create_dir(&at).map_err(|e| NoTmpfs(e.to_string()))?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k,mode=0700"), "tmpfs"])
            .arg(&at)
            .output()
            .map_err(|e| NoTmpfs(format!("mount: {e}")))?;
        match out.status.success() {
            true => Ok(Tmpfs { _dir: dir, at }),
            false => Err(NoTmpfs(String::from_utf8_lossy(&out.stderr).trim().to_string())),
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.at).status();
    }
}

/// A tmpfs of `kib`, or None (with the reason printed) where none can be
/// mounted and the test is not required.
fn tmpfs(kib: u32) -> Option<Tmpfs> {
    match Tmpfs::mount(kib) {
        Ok(t) => Some(t),
        Err(why) if std::env::var_os(REQUIRED).is_some() => {
            panic!("{REQUIRED} is set, but a tmpfs could not be mounted: {why}")
        }
        Err(why) => {
            eprintln!("SKIPPED: cannot mount a tmpfs here ({why})");
            None
        }
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

fn verify(dir: &Path) -> harness::Finished {
    let mut c = coordinator();
    c.arg("verify").arg(dir);
    run(c)
}

/// What one run on a disk of `kib` ended as.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone, Copy)]
enum Ending {
    /// Even failure.json could not be written: the console is the record.
    Unrecorded,
    Failed,
    Completed,
}

/// Runs a small diagnostic run on a disk of `kib` and checks the one-ending
/// invariant; returns how it ended.
fn ending_at(kib: u32) -> Option<Ending> {
    let fs = tmpfs(kib)?;
    let out = fs.at.join("run");
    let mut c = coordinator();
    c.arg("--output").arg(&out).args(["--quiet", "--stage", "noop", "--stage", "write:2"]);
    let f = run(c);
    let files = names(&out);
    let has = |n: &str| files.iter().any(|f| f == n);
    let errors: Vec<&str> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
    let at = format!("{kib} KiB: exit {:?}, files {files:?}, stderr:\n{}", f.code(), f.stderr);
    assert!(!(has("report.json") && has("failure.json")), "both endings at {at}");
    // Nothing else on stderr names the failure: one line, one format.
    assert!(!f.stderr.contains("ERROR"), "a second, logged report of the failure at {at}");
    let ending = match f.code() {
        Some(0) => {
            assert!(has("report.json") && errors.is_empty(), "{at}");
            let v = verify(&out);
            assert_eq!(v.code(), Some(0), "a completed run does not verify at {at}\n{}", v.stderr);
            Ending::Completed
        }
        Some(1) => {
            assert!(!has("report.json"), "a failed run left report.json at {at}");
            assert_eq!(errors.len(), 1, "not one error line at {at}");
            if has("failure.json") {
                // Only the declaration and environment stay beside it.
                for f in &files {
                    assert!(
                        ["declaration.json", "environment.json", "failure.json"]
                            .contains(&f.as_str()),
                        "{f} left beside failure.json at {at}"
                    );
                }
                assert!(errors[0].contains("recorded in"), "{at}");
                let v = verify(&out);
                assert_ne!(v.code(), Some(0), "a failed run verified at {at}");
                Ending::Failed
            } else {
                assert!(errors[0].contains("no failure.json"), "the line does not say so at {at}");
                Ending::Unrecorded
            }
        }
        other => panic!("exit {other:?} on a full disk: {at}"),
    };
    Some(ending)
}

#[test]
fn a_run_on_a_full_disk_has_exactly_one_ending_at_every_size() {
    let mut seen = Vec::new();
    // 4 to 128 KiB in 4 KiB steps, then one size with room to spare.
    for kib in (4..=128).step_by(4).chain([512]) {
        let Some(ending) = ending_at(kib) else { return };
        seen.push((kib, ending));
    }
    // The sweep crosses every write point: the smallest disks cannot hold
    // even failure.json, middling ones fail while rendering, the largest
    // completes. (Not monotone in between: the plots' sizes follow the
    // figures measured, so one size may complete and the next fail.)
    let kinds: std::collections::BTreeSet<Ending> = seen.iter().map(|s| s.1).collect();
    assert_eq!(kinds.len(), 3, "the sweep did not reach every ending: {seen:?}");
    assert_eq!(seen[0].1, Ending::Unrecorded, "{seen:?}");
    assert_eq!(seen[seen.len() - 1].1, Ending::Completed, "{seen:?}");
}

/// A cold preparation that fills its disk: the message names the series by
/// its number (never its id), and the partial cache is removed.
#[test]
fn a_cache_that_fills_the_disk_is_named_by_number_and_removed() {
    let Some(fs) = tmpfs(256) else { return };
    let data = harness::data::tiny();
    let out = fs.at.join("run");
    let mut c = coordinator();
    c.args(["--quiet", "--mode", "cold-prep", "--workers", "2", "--rounds", "1", "--data"])
        .arg(&data.frozen)
        .arg("--output")
        .arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    let line = f.stderr.lines().find(|l| l.starts_with("error:")).unwrap();
    let at = line.find("training series ").expect(line) + "training series ".len();
    let words: Vec<&str> = line[at..].splitn(4, ' ').collect();
    let (n, of) = (words[0].parse::<u32>(), words[2].trim_end_matches(':').parse::<u32>());
    assert!(words[1] == "of" && n.is_ok() && of.is_ok() && n.unwrap() <= of.unwrap(), "{line}");
    assert!(line.contains("No space left on device"), "{line}");
    let frozen = std::fs::read_to_string(data.frozen.join("frozen.json")).unwrap();
    let ids = harness::json(&data.frozen.join("frozen.json"));
    for s in ids["series"].as_array().expect(&frozen) {
        let id = s["id"].as_str().unwrap();
        assert!(!line.contains(id), "the error names series id {id}: {line}");
    }
    assert_eq!(names(&out), ["declaration.json", "environment.json", "failure.json"]);
}

/// `dashboard` and `verify` call a run with both files incomplete, never ok.
#[test]
fn a_run_with_both_endings_is_neither_ok_nor_verified() {
    let tmp = tempfile::tempdir().unwrap();
    let runs = tmp.path().join("runs");
    let (good, failed) = (runs.join("good"), runs.join("failed"));
    let mut c = coordinator();
    c.arg("--output").arg(&good).args(["--quiet", "--stage", "noop"]);
    assert_eq!(run(c).code(), Some(0));
    let mut c = coordinator();
    c.arg("--output").arg(&failed).args(["--quiet", "--stage", "fail"]);
    assert_eq!(run(c).code(), Some(1));
    std::fs::copy(failed.join("failure.json"), good.join("failure.json")).unwrap();
    std::fs::remove_dir_all(&failed).unwrap();
    let v = verify(&good);
    assert_eq!(v.code(), Some(3), "{}", v.stderr);
    assert!(v.stderr.contains("both report.json and failure.json"), "{}", v.stderr);
    let mut c = coordinator();
    c.arg("dashboard").arg(&runs);
    assert_eq!(run(c).code(), Some(0));
    let table = std::fs::read_to_string(runs.join("README.md")).unwrap();
    let row = table.lines().find(|l| l.starts_with("| good")).expect(&table);
    assert!(row.contains("**incomplete**") && !row.contains("| ok |"), "{row}");
}

/// A campaign on a full disk: its directory ends with report.json (exit 0,
/// or 1 with the trials that failed named) or with failure.json (beside its
/// declaration, environment, runs and state), never both, and every run
/// under runs/ has one ending of its own.
#[test]
fn a_campaign_on_a_full_disk_has_exactly_one_ending_at_every_size() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("work")).unwrap();
    let file = tmp.path().join("c.toml");
    let stage =
        r#"echo '{\"name\": \"a\", \"seconds\": 0.01}' >> \"$STAGEBENCH_SPANS\"; echo 1 > done_a"#;
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"full\"\ntrials = 2\nscratch = \"{}\"\n\n[[pipeline]]\nname = \"a\"\nargv = [\"sh\", \"-c\", \"{stage}\"]\ncwd = \"{}\"\nmarker = \"{}\"\nreset = [\"{}\"]\n\n[[step]]\nname = \"cold\"\nkind = \"cold\"\n\n[[step]]\nname = \"resume\"\nkind = \"resume\"\n",
            tmp.path().join("work").display(),
            tmp.path().join("work").display(),
            tmp.path().join("work/done_a").display(),
            tmp.path().join("work/done_a").display(),
        ),
    )
    .unwrap();
    let mut endings = std::collections::BTreeSet::new();
    for kib in [16, 64, 128, 256, 384, 512, 768, 1024, 4096] {
        let Some(fs) = tmpfs(kib) else { return };
        let out = fs.at.join("campaign");
        let f = run_campaign(&file, &out);
        let files = names(&out);
        let has = |n: &str| files.iter().any(|f| f == n);
        let at = format!("{kib} KiB: exit {:?}, files {files:?}, stderr:\n{}", f.code(), f.stderr);
        assert!(!(has("report.json") && has("failure.json")), "both endings at {at}");
        assert!(!f.stderr.contains("ERROR"), "a second report of the failure at {at}");
        match f.code() {
            Some(0) => {
                assert_eq!(verify(&out).code(), Some(0), "{at}");
                endings.insert("completed");
            }
            // A campaign whose trials failed (a full disk met by one of its
            // runs) completes with its report and exits 1: the failed trials
            // are its first finding, each said in a line of its own.
            Some(1) if has("report.json") => {
                assert_eq!(verify(&out).code(), Some(0), "{at}");
                let r = harness::json(&out.join("report.json"));
                let failed = r["failed_trials"].as_array().map_or(0, Vec::len);
                assert!(failed >= 1, "exit 1 with a report that names no failed trial at {at}");
                let trials = f.stderr.lines().filter(|l| l.starts_with("error: step ")).count();
                assert_eq!(trials, failed, "{at}");
                endings.insert("completed with failed trials");
            }
            Some(1) => {
                let errors = f.stderr.lines().filter(|l| l.starts_with("error:")).count();
                assert_eq!(errors, 1, "{at}");
                if has("failure.json") {
                    for name in &files {
                        assert!(
                            [
                                "declaration.json",
                                "environment.json",
                                "failure.json",
                                "runs",
                                "state"
                            ]
                            .contains(&name.as_str()),
                            "{name} left beside the campaign's failure.json at {at}"
                        );
                    }
                    endings.insert("failed");
                } else {
                    assert!(f.stderr.contains("no failure.json"), "{at}");
                    endings.insert("unrecorded");
                }
                // Every run the campaign started has one ending of its own.
                for step in names(&out.join("runs")) {
                    for trial in names(&out.join("runs").join(&step)) {
                        let run = names(&out.join("runs").join(&step).join(&trial));
                        let both = run.iter().any(|n| n == "report.json")
                            && run.iter().any(|n| n == "failure.json");
                        assert!(!both, "runs/{step}/{trial} has both endings at {at}");
                    }
                }
            }
            other => panic!("exit {other:?} at {at}"),
        }
    }
    eprintln!("campaign endings seen across the sizes: {endings:?}");
    assert!(endings.contains("completed") && endings.contains("failed"), "{endings:?}");
}
