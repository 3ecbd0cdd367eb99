//! A stage's memory cgroup: where it is made, that it is removed, and
//! which stale ones are swept.

use super::*;

/// This test process's memory cgroup directory (v1), where workers make
/// their stage cgroups.
fn own_memory_cgroup() -> PathBuf {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let path = text.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_string()));
    Path::new("/sys/fs/cgroup/memory").join(path.unwrap().trim_start_matches('/'))
}

/// With a cgroup per stage: a command runs in its stage's cgroup, made
/// below the worker's own; the worker removes it when the stage ends; and
/// a stage cgroup that a dead worker left is swept, while one whose worker
/// lives and names this code does not give are kept.
#[test]
fn a_stage_cgroup_is_below_the_workers_removed_after_and_only_dead_workers_ones_are_swept() {
    if !cgroups_here() {
        harness::skip(
            "a_stage_cgroup_is_below_the_workers_removed_after_and_only_dead_workers_ones_are_swept",
            "no writable v1 memory cgroup here",
        );
        return;
    }
    let parent = own_memory_cgroup();
    let pid_max: i32 =
        std::fs::read_to_string("/proc/sys/kernel/pid_max").unwrap().trim().parse().unwrap();
    let dead = parent.join(format!("stagebench-{}-0", pid_max + 1));
    let kept = [
        parent.join(format!("stagebench-{}-0", std::process::id())),
        parent.join(format!("stagebench-{}-x", pid_max + 1)),
        parent.join("stagebench-notapid-0"),
    ];
    for d in kept.iter().chain([&dead]) {
        std::fs::create_dir(d).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let seen = dir.path().join("cgroup");
    let (_tmp, out, mut c) = coordinator_with_output();
    c.env_remove("STAGEBENCH_TREE_METHOD");
    c.args(["--quiet", "--command"]).arg(format!("cat /proc/self/cgroup > '{}'", seen.display()));
    let f = run(c);
    let swept = !dead.exists();
    let kept_now: Vec<bool> = kept.iter().map(|d| d.exists()).collect();
    for d in kept.iter().chain([&dead]) {
        let _ = std::fs::remove_dir(d);
    }
    assert_eq!(f.code(), Some(0), "{}", f.stderr);
    let report = harness::reports::read(&out);
    let st = harness::reports::stage(&report, "command");
    assert_eq!(st.tree_peak_method, "cgroup", "{st:?}");
    let workers = f.worker_pids();
    assert_eq!(workers.len(), 1, "{}", f.stderr);
    let line = std::fs::read_to_string(&seen).unwrap();
    let memory = line.lines().find_map(|l| l.split_once(":memory:").map(|(_, p)| p.to_string()));
    let here = Path::new("/sys/fs/cgroup/memory").join(memory.unwrap().trim_start_matches('/'));
    assert_eq!(here.parent(), Some(parent.as_path()), "the command's cgroup {here:?}");
    let name = here.file_name().unwrap().to_string_lossy().into_owned();
    assert!(name.starts_with(&format!("stagebench-{}-", workers[0])), "{name}");
    assert!(!here.exists(), "the worker left its stage cgroup {name}");
    assert!(swept, "a dead worker's stage cgroup was not swept");
    assert_eq!(kept_now, [true, true, true], "a live worker's, or a name not ours, was removed");
}
