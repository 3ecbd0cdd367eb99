//! Stages and coordinators that end abnormally (a timeout, a kill) leave no
//! daemon, stage cgroup or socket directory behind.

use super::*;

#[test]
fn a_stage_that_times_out_leaves_no_daemon_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("daemon.pid");
    let (_tmp, out, mut c) = coordinator_with_output();
    let cgroup = PrivateCgroup::new("timeout");
    if let Some(cg) = &cgroup {
        cg.enter(&mut c);
    }
    // The grace is shorter than the 2 s the worker's SIGTERM path may spend
    // on a tree that will not die: ending this one takes milliseconds.
    c.args(["--quiet", "--stage-timeout", "1", "--grace", "1.5", "--command"]).arg(format!(
        "setsid sleep 79.25 >/dev/null 2>&1 </dev/null & echo $! > {}; sleep 30",
        pid_file.display()
    ));
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "stage_timeout");
    // The worker's tree thread took the SIGTERM, ended the tree and exited
    // 143 (not killed after the grace, which could leave the daemon).
    let message = failure["message"].as_str().unwrap();
    assert!(message.ends_with("ended the stage's processes and exited 143"), "{message}");
    let daemon = pid_written_to(&pid_file);
    assert!(
        harness::wait_gone(daemon, std::time::Duration::from_secs(5)),
        "the daemon {daemon} of a timed-out stage is still running"
    );
    f.assert_no_worker_left();
    if let Some(cg) = &cgroup {
        assert_eq!(cg.stage_cgroups(), Vec::<String>::new(), "the worker left its stage cgroup");
    }
}

#[test]
fn a_coordinator_killed_mid_stage_leaves_no_daemon_behind() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("daemon.pid");
    let (_tmp, _out, mut c) = coordinator_with_output();
    c.args(["--command"]).arg(format!(
        "setsid sleep 79.75 >/dev/null 2>&1 </dev/null & echo $! > {}; sleep 30",
        pid_file.display()
    ));
    let running = harness::Running::spawn(c);
    let daemon = pid_written_to(&pid_file);
    assert!(harness::alive(daemon), "the daemon never ran");
    // SAFETY: kill(2) on the coordinator we spawned.
    unsafe { libc::kill(running.pid(), libc::SIGKILL) };
    let (_, stderr) = running.finish();
    assert!(
        harness::wait_gone(daemon, std::time::Duration::from_secs(5)),
        "the daemon {daemon} outlived its coordinator"
    );
    for pid in harness::worker_pids(&stderr) {
        assert!(harness::wait_gone(pid, std::time::Duration::from_secs(5)), "worker {pid} left");
    }
}

/// A coordinator killed outright while a spanned Python command runs: its
/// worker (SIGTERM on its parent's death) ends the tree and removes the
/// helper's bootstrap directory it made in the run directory, which a
/// killed run once kept (`.spans-bootstrap-worker-0-PID`).
#[test]
fn a_killed_coordinators_worker_leaves_no_helper_directory_in_the_run() {
    // Three times: the worker may also see its socket close first and
    // return, which removed the directory before too (2 kills in 8).
    for _ in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("python.pid");
        let (_tmp, out, mut c) = coordinator_with_output();
        let py = harness::python(&mut c);
        let program = format!(
            "import os, time; open('{}', 'w').write(str(os.getpid())); time.sleep(30)",
            pid_file.display()
        );
        c.args(["--mode", "trials", "--trials", "2", "--warmup", "0", "--span", "time:sleep"]);
        c.arg("--command").arg(format!("{py} -c \"{program}\""));
        let running = harness::Running::spawn(c);
        let child = pid_written_to(&pid_file);
        let helper = |out: &Path| -> Vec<String> {
            let names: Vec<String> = match std::fs::read_dir(out) {
                Ok(d) => {
                    d.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
                }
                Err(_) => Vec::new(),
            };
            names.into_iter().filter(|n| n.starts_with(".spans-bootstrap-")).collect()
        };
        assert_eq!(helper(&out).len(), 1, "the helper's directory while the command runs");
        // SAFETY: kill(2) on the coordinator we spawned.
        unsafe { libc::kill(running.pid(), libc::SIGKILL) };
        let (_, stderr) = running.finish();
        assert!(harness::wait_gone(child, std::time::Duration::from_secs(5)), "{child} left");
        // The worker removes the directory after the tree is dead, before
        // it exits: waited for by its pid.
        let workers = harness::worker_pids(&stderr);
        assert!(!workers.is_empty(), "{stderr}");
        for pid in workers {
            assert!(harness::wait_gone(pid, std::time::Duration::from_secs(5)), "{pid} left");
        }
        assert_eq!(helper(&out), Vec::<String>::new(), "left in the killed run's directory");
    }
}

/// Socket directories in the temp directory, by name.
fn socket_dirs(tmp: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(tmp)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("stagebench-"))
        .collect();
    v.sort();
    v
}

#[test]
fn a_killed_coordinators_socket_directory_is_removed_by_the_next_and_nothing_else_is() {
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    // Not ours to remove: a live pid's, a name we never give, one with a file of someone's.
    let live = format!("stagebench-{}-live00", std::process::id());
    for name in [live.as_str(), "stagebench-notours"] {
        std::fs::create_dir(t.join(name)).unwrap();
    }

    let (_keep, _out, mut c) = coordinator_with_output();
    c.env("TMPDIR", t).args(["--command", "sleep 30"]);
    let mut killed = harness::Running::spawn(c);
    killed.wait_for("phase started");
    let pid = killed.pid();
    let with_file = format!("stagebench-{pid}-planted");
    std::fs::create_dir(t.join(&with_file)).unwrap();
    std::fs::write(t.join(&with_file).join("notes.txt"), b"mine").unwrap();
    // SAFETY: kill(2) on the coordinator this test spawned.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = killed.finish();
    let left: Vec<String> = socket_dirs(t)
        .into_iter()
        .filter(|n| n.starts_with(&format!("stagebench-{pid}-")) && *n != with_file)
        .collect();
    assert_eq!(left.len(), 1, "the killed coordinator's socket directory: {left:?}");

    let (_keep2, _out2, mut c) = coordinator_with_output();
    c.env("TMPDIR", t).args(["--quiet", "--stage", "noop"]);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let now = socket_dirs(t);
    assert!(!now.contains(&left[0]), "the stale directory is still there: {now:?}");
    let mut expected = vec![live, "stagebench-notours".to_string(), with_file];
    expected.sort();
    assert_eq!(now, expected, "only the stale socket directory goes");
}
