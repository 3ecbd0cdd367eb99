//! Bad input gets one line naming what is wrong (file, and series and row
//! where they apply), a non-zero exit, no output or report, and leaves every
//! input byte untouched.

use harness::data::{Raw, copy_dir, f64_column, snapshot, tiny, write_columns};
use harness::{Running, coordinator, json, run};
use std::path::{Path, PathBuf};

/// Writes a raw cohort into a fresh directory and tries to freeze it.
fn freeze_raw(setup: impl FnOnce(&Path)) -> (tempfile::TempDir, harness::Finished, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    std::fs::create_dir(&raw).unwrap();
    std::fs::write(raw.join("train_events.csv"), Raw::valid(40).events()).unwrap();
    Raw::valid(40).write(&raw.join("train_series.parquet"));
    setup(&raw);
    let before = snapshot(&raw);
    let out = tmp.path().join("frozen");
    let mut c = coordinator();
    c.args(["dataset", "freeze", "--series"]).arg(raw.join("train_series.parquet"));
    c.arg("--events").arg(raw.join("train_events.csv")).arg("--out").arg(&out);
    let f = run(c);
    assert_eq!(snapshot(&raw), before, "an input file was changed");
    (tmp, f, out)
}

/// Asserts a refused freeze: exit 2, one error line containing `needle`, no output.
fn refused(f: &harness::Finished, out: &Path, needle: &str) {
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    let errors: Vec<_> = f.stderr.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(errors.len(), 1, "{}", f.stderr);
    assert!(errors[0].contains(needle), "expected '{needle}' in: {}", errors[0]);
    assert!(!out.exists(), "a refused freeze left output");
    let parent = out.parent().unwrap();
    let leftovers: Vec<_> = std::fs::read_dir(parent)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "a partial directory was left behind");
}

#[test]
fn a_valid_raw_cohort_freezes() {
    let (_t, f, out) = freeze_raw(|_| {});
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let frozen = json(&out.join("frozen.json"));
    assert_eq!(frozen["series"].as_array().unwrap().len(), 2);
    assert_eq!(frozen["series"][0]["samples"], 40);
}

#[test]
fn extra_columns_are_ignored() {
    let (_t, f, _) = freeze_raw(|raw| {
        let r = Raw::valid(40);
        let mut cols = r.columns();
        cols.push(("battery", f64_column(&r.anglez)));
        write_columns(&raw.join("train_series.parquet"), cols);
    });
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
}

#[test]
fn a_missing_column_is_named() {
    let (_t, f, out) = freeze_raw(|raw| {
        let cols = Raw::valid(40).columns().into_iter().filter(|(n, _)| *n != "enmo").collect();
        write_columns(&raw.join("train_series.parquet"), cols);
    });
    refused(&f, &out, "train_series.parquet: missing column 'enmo'");
}

#[test]
fn a_wrong_column_type_is_named() {
    let (_t, f, out) = freeze_raw(|raw| {
        let r = Raw::valid(40);
        let cols = r
            .columns()
            .into_iter()
            .map(|(n, a)| if n == "anglez" { (n, f64_column(&r.anglez)) } else { (n, a) })
            .collect();
        write_columns(&raw.join("train_series.parquet"), cols);
    });
    refused(&f, &out, "column 'anglez' has type Float64, expected Float32");
}

#[test]
fn a_truncated_parquet_file_is_refused() {
    let (_t, f, out) = freeze_raw(|raw| {
        let p = raw.join("train_series.parquet");
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() / 2]).unwrap();
    });
    refused(&f, &out, "train_series.parquet: not a readable parquet file");
}

#[test]
fn a_corrupt_parquet_file_is_refused() {
    let (_t, f, out) = freeze_raw(|raw| {
        let p = raw.join("train_series.parquet");
        let mut bytes = std::fs::read(&p).unwrap();
        let third = bytes.len() / 3;
        for b in bytes.iter_mut().skip(4).take(third) {
            *b ^= 0x5a;
        }
        std::fs::write(&p, bytes).unwrap();
    });
    assert_ne!(f.code(), Some(0), "{}", f.stderr);
    refused(&f, &out, "train_series.parquet");
}

#[test]
fn a_step_gap_names_series_and_row() {
    let (_t, f, out) = freeze_raw(|raw| {
        let mut r = Raw::valid(40);
        r.step[45] = 6; // series bbbbbbbbbbbb, its 6th row (file row 45) should be step 5
        r.write(&raw.join("train_series.parquet"));
    });
    refused(&f, &out, "series bbbbbbbbbbbb, row 45: step 6 where 5 was expected");
}

#[test]
fn reordered_rows_are_refused() {
    let (_t, f, out) = freeze_raw(|raw| {
        let mut r = Raw::valid(40);
        r.step.swap(10, 11);
        r.timestamp.swap(10, 11);
        r.write(&raw.join("train_series.parquet"));
    });
    refused(&f, &out, "series aaaaaaaaaaaa, row 10: step 11 where 10 was expected");
}

#[test]
fn a_broken_utc_cadence_is_refused() {
    let (_t, f, out) = freeze_raw(|raw| {
        let mut r = Raw::valid(40);
        r.timestamp[20] = "2018-08-14T15:31:45-0400".into(); // 5 s too late
        r.write(&raw.join("train_series.parquet"));
    });
    refused(
        &f,
        &out,
        "series aaaaaaaaaaaa, row 20: timestamp '2018-08-14T15:31:45-0400' is 10 s after the previous row",
    );
}

#[test]
fn an_unparseable_timestamp_is_refused() {
    let (_t, f, out) = freeze_raw(|raw| {
        let mut r = Raw::valid(40);
        r.timestamp[3] = "14/08/2018 15:30".into();
        r.write(&raw.join("train_series.parquet"));
    });
    refused(&f, &out, "series aaaaaaaaaaaa, row 3: timestamp '14/08/2018 15:30' cannot be parsed");
}

#[test]
fn an_events_file_without_a_column_is_refused() {
    let (_t, f, out) = freeze_raw(|raw| {
        std::fs::write(raw.join("train_events.csv"), "series_id,night,event,timestamp\n").unwrap();
    });
    refused(&f, &out, "train_events.csv: missing column 'step'");
}

#[test]
fn events_naming_an_unknown_series_a_malformed_night_or_event_are_refused() {
    let ts = "2018-08-14T15:30:50-0400";
    for (line, needle) in [
        (
            format!("cccccccccccc,1,onset,10,{ts}"),
            "line 6: event for series cccccccccccc, which is not in the series file",
        ),
        (
            format!("aaaaaaaaaaaa,first,onset,10,{ts}"),
            "line 6: night 'first' is not a whole number",
        ),
        (format!("aaaaaaaaaaaa,-1,onset,10,{ts}"), "line 6: night '-1' is not a whole number"),
        (
            format!("aaaaaaaaaaaa,2,nap,10,{ts}"),
            "line 6: event 'nap' is neither 'onset' nor 'wakeup'",
        ),
        (format!("aaaaaaaaaaaa,2,onset,ten,{ts}"), "line 6: step 'ten' is not a number"),
    ] {
        let (_t, f, out) = freeze_raw(|raw| {
            let mut events = Raw::valid(40).events();
            events.push_str(&line);
            events.push('\n');
            std::fs::write(raw.join("train_events.csv"), events).unwrap();
        });
        refused(&f, &out, &format!("train_events.csv: {needle}"));
    }
}

#[test]
fn an_empty_cohort_is_refused() {
    let (_t, f, out) = freeze_raw(|raw| {
        let mut r = Raw::valid(0);
        r.series_id.clear();
        r.write(&raw.join("train_series.parquet"));
    });
    refused(&f, &out, "holds no series (empty cohort)");
}

#[test]
fn an_existing_freeze_output_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("mine");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    let mut c = coordinator();
    c.args(["dataset", "freeze", "--series"]).arg(tiny().raw.join("train_series.parquet"));
    c.arg("--events").arg(tiny().raw.join("train_events.csv")).arg("--out").arg(&out);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("already exists"), "{}", f.stderr);
    assert_eq!(std::fs::read_to_string(out.join("keep.txt")).unwrap(), "mine");
    assert_eq!(harness::files_below(&out), ["keep.txt"]);
}

/// A copy of the tiny frozen dataset that a test may damage.
fn damaged_copy(damage: impl FnOnce(&Path, &serde_json::Value)) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("frozen");
    copy_dir(&tiny().frozen, &data);
    let frozen = json(&data.join("frozen.json"));
    damage(&data, &frozen);
    (tmp, data)
}

fn first_of(frozen: &serde_json::Value, partition: &str) -> String {
    frozen["series"].as_array().unwrap().iter().find(|s| s["partition"] == partition).unwrap()["file"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_source_changed_after_freezing_fails_verify_before() {
    let mut changed = String::new();
    let (_t, data) = damaged_copy(|d, frozen| {
        changed = first_of(frozen, "test");
        let p = d.join(&changed);
        let mut b = std::fs::read(&p).unwrap();
        b[100] ^= 1;
        std::fs::write(&p, b).unwrap();
    });
    let before = snapshot(&data);
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--workers", "2", "--data"]).arg(&data);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    let line = f.stderr.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(line.contains(&format!("{changed} has changed since freezing")), "{line}");
    assert!(!out.join("report.json").exists());
    assert_eq!(json(&out.join("failure.json"))["stage"], "verify_before");
    assert_eq!(snapshot(&data), before);
    f.assert_no_worker_left();
}

#[test]
fn a_source_changed_during_the_run_fails_verify_after() {
    let (_t, data) = damaged_copy(|_, _| {});
    let frozen = json(&data.join("frozen.json"));
    // A validation series: preparation never reads it, only verify_after can notice.
    let changed = first_of(&frozen, "validation");
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--workers", "2", "--data"]).arg(&data);
    let mut r = Running::spawn(c);
    // verify_before has passed once the serial preparation has started.
    r.wait_for("phase started key=cold_feature_cache_prepare ");
    let p = data.join(&changed);
    let mut b = std::fs::read(&p).unwrap();
    b[100] ^= 1;
    std::fs::write(&p, b).unwrap();
    let (status, stderr) = r.finish();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("{changed} has changed since freezing")), "{stderr}");
    assert_eq!(json(&out.join("failure.json"))["stage"], "verify_after");
    assert!(!out.join("report.json").exists());
}

#[test]
fn a_hand_edited_frozen_json_is_refused_before_anything_runs() {
    let (_t, data) = damaged_copy(|d, _| {
        let p = d.join("frozen.json");
        let text =
            std::fs::read_to_string(&p).unwrap().replacen("\"samples\": ", "\"samples\": 1", 1);
        std::fs::write(&p, text).unwrap();
    });
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--data"]).arg(&data);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("frozen.json: edited after freezing"), "{}", f.stderr);
    assert!(!out.exists(), "a run directory was created for refused input");
    assert!(f.worker_pids().is_empty());
}

#[test]
fn a_directory_that_is_not_a_frozen_dataset_is_refused() {
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--data"]).arg(&tiny().raw);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("is not a frozen dataset (no frozen.json)"), "{}", f.stderr);
    assert!(!out.exists());
    // A directory that is not there says so, not "no frozen.json".
    let (tmp, out, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--data"]).arg(tmp.path().join("missing"));
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("missing': no such directory"), "{}", f.stderr);
    assert!(!out.exists());
}

#[test]
fn verify_of_a_directory_that_is_not_there_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = harness::coordinator();
    c.arg("verify").arg(tmp.path().join("nonexistent"));
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    assert!(f.stderr.contains("nonexistent' is not a directory"), "{}", f.stderr);
}

#[test]
fn launcher_flags_are_checked_before_a_run_directory_exists() {
    for (args, expected) in [
        (vec!["--listen", "nonsense"], "--listen nonsense: cannot listen there"),
        (vec!["--listen", "192.0.2.1:0"], "--listen 192.0.2.1:0: cannot listen there"),
        (vec!["--partition", "p"], "--partition applies to --launcher slurm"),
        (vec!["--srun-arg=--overcommit"], "--srun-arg applies to --launcher slurm"),
    ] {
        let (_tmp, out, mut c) = harness::coordinator_with_output();
        c.args(["--stage", "noop"]).args(&args);
        let f = harness::run(c);
        assert_eq!(f.code(), Some(2), "{args:?}: {}", f.stderr);
        assert!(f.stderr.contains(expected), "{args:?}: {}", f.stderr);
        assert!(!out.exists(), "{args:?} created the run directory");
    }
}

/// A flag a mode would ignore is refused in one line naming the modes that
/// use it, before anything is created; so is a stage no mode knows, with
/// every stage name the mode takes.
#[test]
fn flags_a_mode_does_not_use_and_unknown_stages_are_refused_naming_what_is_taken() {
    for (args, needle) in [
        (
            vec!["--trials", "3"],
            "--trials applies to --mode trials; --mode diagnostic does not use it",
        ),
        (vec!["--mode", "cold-prep", "--warmup", "0"], "--warmup applies to --mode trials"),
        (vec!["--seed", "1"], "--seed applies to --mode trials, --mode profile, --mode recipe"),
        (vec!["--mode", "trials", "--isolation", "run"], "--mode trials does not use it"),
        (vec!["--mode", "cold-prep", "--isolation", "run"], "--mode cold-prep does not use it"),
        (
            vec!["--data", "/nonexistent"],
            "--data applies to --mode cold-prep, --mode trials, --mode profile, --mode recipe; --mode diagnostic does not use it",
        ),
        // Every mode's own flag, with another mode: named by the registry.
        (
            vec!["--mode", "trials", "--prepare", "true"],
            "--prepare applies to --mode cold-prep; --mode trials does not use it",
        ),
        (
            vec!["--mode", "profile", "--state", "x"],
            "--state applies to --mode recipe; --mode profile does not use it",
        ),
        (
            vec!["--mode", "cold-prep", "--kill-at", "x:0.5"],
            "--kill-at applies to --mode diagnostic, --mode recipe; --mode cold-prep does not use it",
        ),
        (
            vec!["--mode", "profile", "--command", "true"],
            "--command applies to --mode diagnostic, --mode trials; --mode profile does not use it",
        ),
        (vec!["--mode", "bench"], "invalid value 'bench' for '--mode <MODE>'"),
        (
            vec!["--mode", "profile", "--rounds", "2"],
            "--rounds applies to --mode cold-prep; --mode profile does not use it",
        ),
        (vec!["--mode", "cold-prep", "--rounds", "0"], "--rounds"),
        (vec!["--mode", "cold-prep", "--workers", "2,1"], "'2,1' is not increasing (1 after 2)"),
        (vec!["--mode", "cold-prep", "--workers", "1,2,2"], "'1,2,2' repeats (2 after 2)"),
        (vec!["--mode", "cold-prep", "--workers", "1,,4"], "'1,,4' has an empty count"),
        (vec!["--mode", "cold-prep", "--workers", ""], "has an empty count"),
        (vec!["--mode", "cold-prep", "--workers", "0,2"], "'0' is not a count of workers"),
        (
            vec!["--mode", "profile", "--workers", "1,2"],
            "a list of counts (a workers sweep) applies to --mode cold-prep",
        ),
        (vec!["--mode", "trials", "--stage", "noop", "--seed", "2"], "none of these stages is one"),
        (vec!["--stage", "cold_feature_cache_prepare"], "warm_fit_normalizer"),
        (vec!["--mode", "trials", "--stage", "warm_fit"], "or a recipe stage: warm_fit_normalizer"),
        // A label that would break a table, a plot or a path.
        (
            vec!["--command", "true", "--name", "x|y\n## injected"],
            "--name \"x|y\\n## injected\" must be 1-64",
        ),
        (vec!["--command", "true", "--name", "../../evil"], "--name \"../../evil\" must be 1-64"),
        (vec!["--command", "true", "--name", " "], "must be 1-64 of A-Z a-z 0-9 _ and -"),
    ] {
        let (_tmp, out, mut c) = harness::coordinator_with_output();
        c.args(&args);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{args:?}: {}", f.stderr);
        assert!(f.stderr.contains(needle), "{args:?}: {}", f.stderr);
        assert_eq!(f.stderr.lines().filter(|l| l.starts_with("error")).count(), 1, "{}", f.stderr);
        assert!(!out.exists(), "{args:?}: a run directory was created");
    }
}

/// A worker started by hand, with a token that is not one, or after the
/// coordinator that launched it exited, refuses in one line with its exit
/// code (setup 2, protocol 4), and never connects.
#[test]
fn a_worker_not_launched_by_a_live_coordinator_refuses_in_one_line() {
    let token = "ab".repeat(32);
    /// The launch environment, the exit code, what stderr says.
    type Case<'a> = (&'a [(&'a str, &'a str)], u8, &'a str);
    let cases: [Case; 4] = [
        (&[], 2, "neither STAGEBENCH_ADDR nor STAGEBENCH_SOCKET is set"),
        (&[("STAGEBENCH_SOCKET", "/nonexistent/s")], 2, "STAGEBENCH_TOKEN is not set"),
        (
            &[("STAGEBENCH_SOCKET", "/nonexistent/s"), ("STAGEBENCH_TOKEN", "zz")],
            2,
            "STAGEBENCH_TOKEN is not 64 hex digits",
        ),
        // Pid 1 is never the test's own process: the parent is gone.
        (
            &[
                ("STAGEBENCH_SOCKET", "/nonexistent/s"),
                ("STAGEBENCH_TOKEN", &token),
                ("STAGEBENCH_RANK", "0"),
                ("STAGEBENCH_PARENT_PID", "1"),
            ],
            4,
            "the coordinator that launched it has already exited",
        ),
    ];
    for (env, code, says) in cases {
        let mut c = std::process::Command::new(&harness::bins().worker);
        for k in protocol::env::LAUNCH {
            c.env_remove(k);
        }
        c.envs(env.iter().copied());
        let out = c.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code as i32), "{env:?}: {stderr}");
        assert!(stderr.contains(says), "{env:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    }
}

/// A `TMPDIR` the workers' socket directory cannot be made in is a
/// refusal (issue 63: it was exit 1, `internal`, with a run directory left):
/// one line naming it, exit 2, no run directory; `--listen` needs none.
#[test]
fn a_tmpdir_that_cannot_hold_the_socket_is_refused_before_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut c = coordinator();
    c.env("TMPDIR", "/nonexistent/stagebench-tmp").arg("--output").arg(&out);
    c.args(["--quiet", "--stage", "noop"]);
    let f = run(c);
    assert_eq!(f.code(), Some(2), "{}", f.stderr);
    let line = f.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(line.contains("TMPDIR=/nonexistent/stagebench-tmp: cannot make"), "{line}");
    assert!(!out.exists(), "a run directory was made");
    assert!(f.worker_pids().is_empty(), "a worker started");
}
