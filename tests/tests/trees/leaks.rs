//! Processes left running when a stage ends: SIGTERM, a grace, SIGKILL,
//! counted and named, warned of or failed.

use super::*;

#[test]
fn daemons_are_killed_named_and_gone_when_their_stage_ends() {
    let s = scripts();
    for (line, marker) in [
        ("nohup setsid sleep 78.25 >/dev/null 2>&1 </dev/null & sleep 0.2".to_string(), "78.25"),
        (py(&s, "daemon.py", "78.5"), "78.5"),
    ] {
        let st = command_stage(&line, &[]);
        assert_eq!(st.leaked_processes.count, 1, "{line}: {st:?}");
        assert_eq!(st.leaked_processes.names[0], "sleep", "{line}: {st:?}");
        // The run has ended: its worker killed and reaped the daemon first.
        let left = processes_with(&format!("sleep {marker}"));
        assert!(left.is_empty(), "{line}: still running: {left:?}");
    }
}

/// Containment is SIGTERM, a grace, then SIGKILL: a daemon that handles
/// SIGTERM has the time to shut down (it writes its file), and one that
/// ignores it is killed all the same; both are named, and both are gone.
#[test]
fn a_leak_gets_sigterm_and_a_grace_and_one_deaf_to_it_is_killed() {
    let s = scripts();
    let (polite, deaf) = (s.dir.join("polite 78.625"), s.dir.join("deaf 78.625"));
    let daemon =
        |mode: &str, file: &Path| py(&s, "grace.py", &format!("{mode} '{}'", file.display()));
    let st =
        command_stage(&format!("{} && {}", daemon("polite", &polite), daemon("deaf", &deaf)), &[]);
    assert_eq!(st.leaked_processes.count, 2, "{st:?}");
    assert_eq!(st.leaked_processes.names, ["python3", "python3"], "{st:?}");
    let said = std::fs::read_to_string(&polite).unwrap_or_default();
    assert_eq!(said, "terminated", "the polite daemon was not given its grace");
    assert!(!deaf.exists(), "the deaf daemon wrote its file");
    // This test's daemons, by their files' directory (a daemon another run
    // left on this machine is not one of them).
    let ours = s.dir.display().to_string();
    assert!(processes_with(&ours).is_empty(), "a daemon outlived its stage");
}

/// Three daemons under three names (copies of `sleep`, so each has its own
/// `comm`), each in a session of its own, that outlive their stage.
fn three_daemons(dir: &Path, marker: &str) -> (String, [&'static str; 3]) {
    let names = ["leak_a", "leak_b", "leak_c"];
    let sleep = ["/usr/bin/sleep", "/bin/sleep"].into_iter().find(|p| Path::new(p).exists());
    let mut line = String::new();
    for name in names {
        std::fs::copy(sleep.expect("a sleep binary"), dir.join(name)).unwrap();
        line += &format!(
            "nohup setsid {} {marker} >/dev/null 2>&1 </dev/null & ",
            dir.join(name).display()
        );
    }
    (line + "sleep 0.3", names)
}

#[test]
fn three_leaked_processes_are_counted_and_named_when_warned_and_when_failed() {
    let s = scripts();
    // Warned (the default): the run succeeds, says so on stderr, and the
    // record holds all three.
    let (line, names) = three_daemons(&s.dir, "78.125");
    let (_tmp, out, mut c) = coordinator_with_output();
    c.args(["--quiet", "--command", &line]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let warning = f
        .stderr
        .lines()
        .find(|l| l.starts_with("warning: stage command left"))
        .unwrap_or_else(|| panic!("no leak warning: {}", f.stderr));
    assert!(warning.contains("left 3 process(es) running"), "{warning}");
    let report = harness::reports::read(&out);
    let st = harness::reports::stage(&report, "command");
    assert_eq!(st.leaked_processes.count, 3, "{st:?}");
    let mut recorded: Vec<&str> = st.leaked_processes.names.iter().map(String::as_str).collect();
    recorded.sort();
    assert_eq!(recorded, names, "{st:?}");
    for name in names {
        assert!(warning.contains(name), "{name} missing from: {warning}");
    }
    assert!(processes_with("78.125").is_empty(), "a daemon outlived its stage");
    f.assert_no_worker_left();

    // Failed: the failure names all three.
    let (line, _) = three_daemons(&s.dir, "78.375");
    let (_tmp, out, mut c) = coordinator_with_output();
    c.args(["--quiet", "--leaks", "fail", "--command", &line]);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    let failure = json(&out.join("failure.json"));
    let message = failure["message"].as_str().unwrap_or_default();
    assert!(message.contains("left 3 process(es) running"), "{failure}");
    for name in names {
        assert!(message.contains(name) && f.stderr.contains(name), "{name}: {failure}");
    }
    assert!(processes_with("78.375").is_empty(), "a daemon outlived its stage");
    f.assert_no_worker_left();
}

#[test]
fn leaks_fail_fails_the_run_with_the_reason_and_no_report() {
    let (_tmp, out, mut c) = coordinator_with_output();
    c.args(["--quiet", "--leaks", "fail", "--command"]);
    c.arg("nohup setsid sleep 78.75 >/dev/null 2>&1 </dev/null & sleep 0.2");
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    assert!(f.stderr.contains("left 1 process(es) running"), "{}", f.stderr);
    assert!(!out.join("report.json").exists());
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "leaked_processes");
    assert_eq!(failure["stage"], "command");
    assert!(processes_with("sleep 78.75").is_empty());
    f.assert_no_worker_left();
}

#[test]
fn bad_leak_and_sample_values_are_usage_errors_before_anything_exists() {
    for args in [["--leaks", "maybe"], ["--sample-ms", "0"], ["--sample-ms", "ten"]] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("run");
        let mut c = coordinator();
        c.args(args).arg("--output").arg(&out);
        let f = run(c);
        assert_eq!(f.code(), Some(2), "{args:?}: {}", f.stderr);
        assert!(f.stderr.contains(args[0]), "{args:?}: {}", f.stderr);
        assert!(!Path::new(&out).exists(), "{args:?} created the run directory");
    }
}
