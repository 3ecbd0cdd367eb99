//! Workers launched through a real Slurm cluster (`scripts/slurm-local.sh`):
//! one `srun` job step per phase, connecting back over TCP. Skipped, with
//! the reason on stderr, where no cluster answers.

use harness::data::tiny;
use harness::slurm::{TAG, cluster, new_tag, skip, tagged};
use harness::{Running, coordinator, json, run};
use std::path::Path;
use std::time::{Duration, Instant};

/// Waits (bounded) until no process of the run is left.
fn assert_nothing_left(tag: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = tagged(tag);
        if left.is_empty() {
            return;
        }
        // slurmstepd reaps its tasks asynchronously after srun has gone.
        assert!(Instant::now() < deadline, "processes of the run left: {left:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn manifest(run: &Path, cache: &str) -> Vec<u8> {
    std::fs::read(run.join(cache).join("manifest.json")).unwrap()
}

/// `--prepare` through srun: each task starts the team's program, which
/// its worker keeps for the task's items and closes before the task ends;
/// the outputs are identical, and no program outlives its task.
#[test]
fn a_teams_preparation_through_slurm() {
    let conf = match cluster() {
        Ok(c) => c,
        Err(reason) => return skip("a_teams_preparation_through_slurm", &reason.to_string()),
    };
    let tag = new_tag();
    let (tmp, out, mut c) = harness::coordinator_with_output();
    let repo = harness::repo();
    let py = harness::python(&mut c);
    let items = tmp.path().join("items");
    std::fs::write(&items, (0..12).map(|i| format!("s{i}\n")).collect::<String>()).unwrap();
    let program = repo.join("tests/scripts/item_program.py");
    c.env("SLURM_CONF", &conf).env(TAG, &tag).env("ITEM_MODE", "ok");
    c.args(["--launcher", "slurm", "--mode", "cold-prep", "--workers", "2", "--rounds", "1"])
        .arg("--prepare")
        .arg(format!("{py} {}", program.display()))
        .arg("--items")
        .arg(&items);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(f.stderr.contains("srun started"), "not through srun: {}", f.stderr);
    let report = harness::reports::read(&out);
    assert_eq!(report.launcher, "slurm");
    let r = harness::reports::cold_prep(&report);
    assert_eq!(r.outputs_identical, Some(true));
    let tasks = &r.parallel.workers;
    assert_eq!(tasks.len(), 2);
    for t in tasks {
        assert!(t.startup_s.is_some_and(|s| s > 0.0), "{t:?}");
        // A task's CPU is its own figures', its program's close included.
        assert!(t.cpu_s > 0.0, "{t:?}");
    }
    let mut v = coordinator();
    v.arg("verify").arg(&out);
    assert_eq!(run(v).code(), Some(0));
    f.assert_no_worker_left();
    assert_nothing_left(&tag);
}

#[test]
fn cold_prep_through_slurm_matches_a_local_run() {
    let conf = match cluster() {
        Ok(c) => c,
        Err(reason) => {
            return skip("cold_prep_through_slurm_matches_a_local_run", &reason.to_string());
        }
    };
    let tag = new_tag();
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.env("SLURM_CONF", &conf).env(TAG, &tag);
    c.args(["--launcher", "slurm", "--mode", "cold-prep", "--workers", "8", "--data"])
        .arg(&tiny().frozen);
    let f = run(c);
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    assert!(f.stderr.contains("srun started"), "not through srun: {}", f.stderr);
    assert!(f.stderr.contains("tcp connection"), "not over TCP: {}", f.stderr);

    let (_tmp2, local, mut c) = harness::coordinator_with_output();
    c.args(["--mode", "cold-prep", "--workers", "2", "--data"]).arg(&tiny().frozen);
    assert_eq!(run(c).code(), Some(0));

    let report = harness::reports::read(&out);
    assert_eq!(report.launcher, "slurm");
    assert_eq!(report.hosts, 1);
    let r = harness::reports::cold_prep(&report);
    assert_eq!(r.caches_identical, Some(true));
    let train = r.counts.as_ref().expect("the recipe's counts").train_series;
    let tasks = &r.parallel.workers;
    assert_eq!(tasks.len() as u64, 8.min(train), "one task per worker slot");
    let records: Vec<_> = report
        .workers
        .iter()
        .filter(|w| w.phase == "cold_feature_cache_prepare_parallel")
        .collect();
    assert_eq!(records.len(), tasks.len(), "the parallel phase's records: {records:?}");
    assert!(records.iter().all(|w| w.task_of_step), "{records:?}");
    for cache in ["private-feature-cache", "private-feature-cache-parallel"] {
        assert_eq!(manifest(&out, cache), manifest(&local, cache), "{cache}");
    }
    let env = json(&out.join("environment.json"));
    assert_eq!(env["launcher"], "slurm");
    let mut c = coordinator();
    c.arg("verify").arg(&out);
    assert_eq!(run(c).code(), Some(0));
    f.assert_no_worker_left();
    assert_nothing_left(&tag);
}

#[test]
fn a_task_killed_mid_run_fails_the_run_naming_its_rank() {
    let conf = match cluster() {
        Ok(c) => c,
        Err(reason) => {
            return skip(
                "a_task_killed_mid_run_fails_the_run_naming_its_rank",
                &reason.to_string(),
            );
        }
    };
    let tag = new_tag();
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.env("SLURM_CONF", &conf).env(TAG, &tag);
    // Four long stages on four tasks of one step (--isolation run).
    c.args(["--launcher", "slurm", "--workers", "4", "--isolation", "run", "--grace", "1"]);
    for _ in 0..4 {
        c.args(["--stage", "sleep:60000"]);
    }
    let mut running = Running::spawn(c);
    for _ in 0..4 {
        running.wait_for("stage started");
    }
    // The tasks are the tagged `worker` processes (not srun, not slurmstepd).
    let workers: Vec<i32> = tagged(&tag)
        .into_iter()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "worker")
        })
        .collect();
    assert_eq!(workers.len(), 4, "{workers:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(workers[0]),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let (status, stderr) = running.finish();
    assert_eq!(status.code(), Some(1), "{stderr}");
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "worker_crashed", "{failure}");
    let rank = failure["worker"].as_u64().expect("the failure names a rank");
    assert!(failure["message"].as_str().unwrap().contains(&format!("worker {rank}")), "{failure}");
    assert!(!out.join("report.json").exists());
    assert_nothing_left(&tag);
}

#[test]
fn an_allocation_srun_refuses_fails_the_run_with_no_task_left() {
    let conf = match cluster() {
        Ok(c) => c,
        Err(reason) => {
            return skip(
                "an_allocation_srun_refuses_fails_the_run_with_no_task_left",
                &reason.to_string(),
            );
        }
    };
    let tag = new_tag();
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.env("SLURM_CONF", &conf).env(TAG, &tag);
    c.args(["--launcher", "slurm", "--partition", "no-such-partition", "--stage", "noop"]);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "worker_exited", "{failure}");
    assert_eq!(failure["worker"], 0);
    assert!(f.stderr.contains("worker 0 exited"), "{}", f.stderr);
    assert!(!out.join("report.json").exists());
    assert_nothing_left(&tag);
}

#[test]
fn a_task_that_never_connects_times_out_and_its_step_is_cancelled() {
    let conf = match cluster() {
        Ok(c) => c,
        Err(reason) => {
            return skip(
                "a_task_that_never_connects_times_out_and_its_step_is_cancelled",
                &reason.to_string(),
            );
        }
    };
    let tag = new_tag();
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.env("SLURM_CONF", &conf).env(TAG, &tag);
    // The allocation is granted only in a minute: the task never connects in time.
    c.args(["--launcher", "slurm", "--srun-arg=--begin=now+60", "--stage", "noop"]);
    c.args(["--connect-timeout", "2", "--grace", "1"]);
    let f = run(c);
    assert_eq!(f.code(), Some(1), "{}", f.stderr);
    let failure = json(&out.join("failure.json"));
    assert_eq!(failure["reason"], "connect_timeout", "{failure}");
    assert!(f.stderr.contains("worker 0 did not connect within 2.0 s"), "{}", f.stderr);
    f.assert_no_worker_left();
    assert_nothing_left(&tag);
}

#[test]
fn interrupting_the_coordinator_cancels_every_task() {
    let conf = match cluster() {
        Ok(c) => c,
        Err(reason) => {
            return skip("interrupting_the_coordinator_cancels_every_task", &reason.to_string());
        }
    };
    let tag = new_tag();
    let (_tmp, out, mut c) = harness::coordinator_with_output();
    c.env("SLURM_CONF", &conf).env(TAG, &tag);
    c.args(["--launcher", "slurm", "--workers", "3", "--isolation", "run", "--grace", "1"]);
    for _ in 0..3 {
        c.args(["--stage", "spin:60000"]);
    }
    let mut running = Running::spawn(c);
    for _ in 0..3 {
        running.wait_for("stage started");
    }
    // The tasks exist before the interrupt, so "none left" below means something.
    let tasks = tagged(&tag);
    let workers = tasks
        .iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "worker")
        })
        .count();
    assert_eq!(workers, 3, "tagged processes: {tasks:?}");
    let pid = nix::unistd::Pid::from_raw(running.pid());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
    let (status, stderr) = running.finish();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(!out.join("report.json").exists());
    assert_nothing_left(&tag);
}
