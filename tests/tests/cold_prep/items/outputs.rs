//! What a program leaves: outputs that differ, files no manifest holds,
//! inputs it changed, processes it left running.

use super::*;

#[test]
fn a_nondeterministic_program_fails_the_run_with_the_count_of_differing_files() {
    let p = prepare("clock", &["--workers", "2", "--rounds", "1"], &[("ITEM_SPECIAL", "secret-c")]);
    let failure = p.assert_failed(
        "outputs_differ",
        "the 1-process and 2-process outputs differ (private-output and private-output-parallel): 1 file(s) differ, 0 missing, 0 extra",
    );
    assert_eq!(failure["stage"], "cold_prepare_parallel");
    // The path goes to the person, on stderr only.
    assert!(p.f.stderr.contains("differs: time.txt"), "{}", p.f.stderr);
    // The control: the same program without the clock file is identical.
    let p = prepare("clock", &["--workers", "2", "--rounds", "1"], &[("ITEM_SPECIAL", "none")]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    let report = harness::reports::read(&p.out);
    assert_eq!(harness::reports::cold_prep(&report).outputs_identical, Some(true));
}

/// A run that ends ok verifies (issue 44): a program that writes beside
/// its output directory (into the run directory), or leaves an empty
/// directory in its output, fails the run (`unaccounted_output`, exit 1)
/// before any report says ok, and what it wrote is kept, named in
/// failure.json's `kept`, which `verify` accounts for.
#[test]
fn a_program_that_writes_what_no_manifest_holds_fails_the_run_and_its_files_are_kept() {
    let one = ["--workers", "2", "--rounds", "1"];
    for (mode, says, kept) in [
        ("stray", "stray.txt is not bound by report.json", vec!["stray.txt"]),
        (
            "empty_dir",
            "private-output/empty/ is an empty directory",
            vec!["private-output/empty", "private-output-parallel/empty"],
        ),
    ] {
        let p = prepare(mode, &one, &[]);
        assert_eq!(p.f.code(), Some(1), "{mode}: {}", p.f.stderr);
        assert!(!p.out.join("report.json").exists(), "{mode}: no report says ok");
        let failure = json(&p.out.join("failure.json"));
        assert_eq!(failure["reason"], "unaccounted_output", "{failure}");
        let message = failure["message"].as_str().unwrap();
        assert!(message.starts_with(says), "{mode}: {message}");
        assert!(message.contains("kept, not deleted"), "{message}");
        let listed: Vec<&str> =
            failure["kept"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(listed, kept, "{mode}");
        for k in &kept {
            assert!(p.out.join(k).exists(), "{mode}: {k} was deleted");
        }
        assert!(
            !p.out.join("private-output/secret-a.txt").exists(),
            "the run's own outputs are cleared"
        );
        p.assert_nothing_left();
        let mut v = harness::coordinator();
        v.arg("verify").arg(&p.out);
        let v = run(v);
        assert_eq!(v.code(), Some(3), "{}", v.stderr);
        assert!(v.stderr.contains("the run failed (unaccounted_output: "), "{}", v.stderr);
    }
    // The control: the same program without the stray verifies.
    let p = prepare("ok", &one, &[]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    let mut v = harness::coordinator();
    v.arg("verify").arg(&p.out);
    assert_eq!(run(v).code(), Some(0));
}

#[test]
fn inputs_that_change_during_the_run_fail_it() {
    let inputs = tempfile::tempdir().unwrap();
    std::fs::write(inputs.path().join("data.bin"), b"input").unwrap();
    let dir = inputs.path().to_str().unwrap();
    let args = ["--workers", "2", "--rounds", "1", "--inputs", dir];
    let p = prepare("touch_inputs", &args, &[("ITEM_INPUTS", dir)]);
    p.assert_failed(
        "inputs_changed",
        "--inputs changed during the run: 1 file(s), 5 bytes before; 2 file(s), 6 bytes after",
    );
    // The control: inputs left alone are declared and reported unchanged.
    std::fs::remove_file(inputs.path().join("touched")).unwrap();
    let p = prepare("ok", &args, &[]);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    let report = harness::reports::read(&p.out);
    let r = harness::reports::cold_prep(&report);
    let inputs = r.items.as_ref().and_then(|i| i.inputs.as_ref()).expect("the inputs' digest");
    assert_eq!(inputs.files, 1);
    assert!(inputs.unchanged);
    let d = json(&p.out.join("declaration.json"));
    assert_eq!(d["parameters"]["inputs_sha256"], inputs.sha256.as_str());
}

/// The items file is read again as items are handed out: one written while
/// the run reads it fails the run, whose declaration holds its old hash.
#[test]
fn an_items_file_written_during_the_run_fails_it() {
    let p = prepare("touch_items", &["--workers", "2", "--rounds", "1"], &[]);
    let failure =
        p.assert_failed("items_changed", "--items: the file changed while the run read it");
    assert_eq!(failure["stage"], "cold_prepare", "found when the first phase ended: {failure}");
}

#[test]
fn a_process_the_program_left_running_is_a_leak_and_is_killed() {
    let pids = tempfile::tempdir().unwrap();
    let pid_file = pids.path().join("sleep.pid");
    let env = [("ITEM_LEAK_PID_FILE", pid_file.to_str().unwrap())];
    let p = prepare("leak", &["--workers", "1", "--rounds", "1"], &env);
    assert_eq!(p.f.code(), Some(0), "{}", p.f.stderr);
    let r = harness::reports::read(&p.out);
    let leaked = &harness::reports::stage(&r, "cold_prepare").leaked_processes;
    assert_eq!(leaked.count, 1, "{leaked:?}");
    assert_eq!(leaked.names[0], "sleep");
    p.assert_nothing_left();
    // This run's own sleep, by its pid (another run's, on a shared machine,
    // may be alive).
    let sleeper: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(
        harness::wait_gone(sleeper, std::time::Duration::from_secs(10)),
        "the leaked sleep {sleeper} is still running"
    );
    // With --leaks fail the same program fails the run.
    let p = prepare("leak", &["--workers", "1", "--rounds", "1", "--leaks", "fail"], &[]);
    p.assert_failed("leaked_processes", "sleep");
}
