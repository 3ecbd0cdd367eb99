//! The single-node Slurm cluster of `scripts/slurm-local.sh`, for tests that
//! launch workers through `srun`. `.ci/run` brings it up; where it is not
//! up (no root, no cgroup filesystem, a developer's machine) the tests are
//! skipped with the reason written straight to stderr, which the test
//! harness does not capture, so a skip is never silent.

use std::path::PathBuf;
use std::process::Command;

/// The variable a test puts in the coordinator's environment to find every
/// process of its run afterwards: srun passes it on to each task.
pub const TAG: &str = "STAGEBENCH_TEST_TAG";

/// Set by `.ci/run` once `scripts/slurm-local.sh up` succeeded: from then
/// on a cluster that does not answer fails the test instead of skipping it.
pub const REQUIRED: &str = "STAGEBENCH_SLURM_REQUIRED";

/// Why there is no cluster to test against.
#[derive(Debug, thiserror::Error)]
pub enum NoCluster {
    #[error("no Slurm config at {} (run scripts/slurm-local.sh up, or set SLURM_CONF)", .0.display())]
    NoConfig(PathBuf),
    #[error("cannot run sinfo: {0}")]
    Sinfo(#[source] std::io::Error),
    #[error("the Slurm cluster does not answer (sinfo: '{state}' {stderr})")]
    NotAnswering { state: String, stderr: String },
}

/// The cluster's config when it answers, or why not.
///
/// # Panics
/// When [`REQUIRED`] is set and the cluster does not answer.
pub fn cluster() -> Result<PathBuf, NoCluster> {
    let found = find_cluster();
    if let (Err(why), Some(_)) = (&found, std::env::var_os(REQUIRED)) {
        panic!("{REQUIRED} is set (the cluster came up), but: {why}");
    }
    found
}

fn find_cluster() -> Result<PathBuf, NoCluster> {
    let conf = std::env::var_os("SLURM_CONF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/stagebench-slurm/slurm.conf"));
    if !conf.exists() {
        return Err(NoCluster::NoConfig(conf));
    }
    let out = Command::new("timeout")
        .args(["10", "sinfo", "-h", "-o", "%T"])
        .env("SLURM_CONF", &conf)
        .output()
        .map_err(NoCluster::Sinfo)?;
    let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || !["idle", "mixed", "allocated"].iter().any(|s| state.starts_with(s))
    {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(NoCluster::NotAnswering { state, stderr });
    }
    Ok(conf)
}

pub use crate::skip;

/// Pids of live processes whose environment holds `TAG=tag`.
pub fn tagged(tag: &str) -> Vec<i32> {
    let needle = format!("{TAG}={tag}");
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != std::process::id() as i32 && crate::alive(*pid))
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .collect()
}

/// A tag unique to this test process and call.
pub fn new_tag() -> String {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    format!("{}-{n}", std::process::id())
}
